# kgplan's web service (docker-compose.yml); EXTRAS=local-llm builds the local model server's image.
FROM python:3.11-slim
ARG EXTRAS=""
WORKDIR /app
RUN if [ -n "$EXTRAS" ]; then apt-get update && apt-get install -y --no-install-recommends build-essential cmake \
    && rm -rf /var/lib/apt/lists/*; fi
COPY . .
ENV CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
# PyTorch's CPU build first (the embeddings run on the CPU): PyPI's default build pulls the CUDA stack
RUN pip install --no-cache-dir torch --index-url https://download.pytorch.org/whl/cpu \
    && pip install --no-cache-dir ".[embeddings${EXTRAS:+,$EXTRAS}]"
EXPOSE 8000
CMD ["kgplan", "serve", "--host", "0.0.0.0", "--port", "8000"]
