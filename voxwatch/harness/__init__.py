"""The measurement harness: measure one item, pace audio in real time, plan and run one tick.
Independent of Celery and the web: `voxwatch run`, the workers and the feature runners call it."""
