# The embedded default in a container: one tick per start, rows kept in the /data volume.
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends libgomp1 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
RUN pip install --no-cache-dir -c constraints.txt .
ENV VOXWATCH_STORE_URL=sqlite:////data/voxwatch.sqlite \
    VOXWATCH_DATASETS_DIR=/data/datasets
VOLUME ["/data"]
ENTRYPOINT ["voxwatch"]
CMD ["run", "--no-progress"]
