# One image for every voxwatch role. Alone it is the embedded default: one tick per start, rows
# kept in the /data volume. docker-compose.yml runs it as the distributed services instead
# (`db upgrade`, `worker`, `beat`, `serve`), with Postgres and Redis from the environment.
# An exact version (docker-compose.yml says how to pin its digest too).
FROM python:3.11.11-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends libgomp1 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
RUN pip install --no-cache-dir -c constraints.txt . \
    && useradd --create-home --uid 10001 voxwatch \
    && mkdir -p /data && chown voxwatch /data
# Celery warns when a worker runs as root; measuring needs no privileges.
USER voxwatch
ENV VOXWATCH_STORE_URL=sqlite:////data/voxwatch.sqlite \
    VOXWATCH_DATASETS_DIR=/data/datasets \
    VOXWATCH_STORE_SPOOL_DIR=/data/spool \
    VOXWATCH_RUN_RECORDINGS_DIR=/data/recordings \
    VOXWATCH_PREFERENCE_OUTPUTS_DIR=/data/preference/outputs
VOLUME ["/data"]
ENTRYPOINT ["voxwatch"]
CMD ["run", "--no-progress"]
