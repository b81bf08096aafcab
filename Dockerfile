# One image for Quire's worker and web console (see docker-compose.yml).
FROM node:20-bookworm-slim AS base
WORKDIR /app
COPY scripts/apt-packages.txt scripts/apt-packages.txt
# The offline engines: native tesseract (its English model data ships in npm), pocketsphinx and sox from Debian;
# poppler and libtiff tools split uploaded PDFs and multi-page TIFFs into pages (I5); ImageMagick converts
# TIFF and WebP pages for the searchable PDF export (I7).
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends sox libsox-fmt-all pocketsphinx pocketsphinx-en-us tesseract-ocr tesseract-ocr-frk poppler-utils libtiff-tools imagemagick ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# The console is built once; the worker bundles its workflows once at image build, and is
# compiled to one module (P6: no tsx loader in the running process).
RUN node node_modules/next/dist/bin/next build web \
 && node --import tsx scripts/bundle-workflows.ts /app/workflow-bundle.js \
 && node --import tsx scripts/build-worker.ts
ENV NODE_ENV=production \
    QUIRE_WORKFLOW_BUNDLE=/app/workflow-bundle.js \
    QUIRE_HEALTH_FILE=/tmp/quire-worker-health.json
USER node
CMD ["node", ".worker-build/main.mjs"]
