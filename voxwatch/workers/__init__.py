"""Workers: the in-process runner (one tick) and, in distributed mode, the Celery tasks."""
