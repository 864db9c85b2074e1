# Thin one-liners; Bun comes from the npm package `bun` (pinned in package.json).
BUN := node_modules/.bin/bun
BIN := dist/ura-sidecar
# --bytecode: parsing moves to build time; the binary starts answering in about half the time (bench/gateway.ts).
COMPILE := $(BUN) build --compile --bytecode --no-compile-autoload-dotenv --no-compile-autoload-bunfig

.PHONY: install build clients system-packages run test unit e2e compat check bench image clean

# npm ci only when package.json or the lock file changed (their SHA-256 is the stamp), not when a
# checkout merely gave them a newer mtime: worktrees share one node_modules through a link, and
# npm ci in a fresh worktree would empty it for every other one.
DEPS_SUM = $(shell cat package.json package-lock.json | sha256sum | cut -d' ' -f1)
install:
	@if [ "$$(cat node_modules/.install-stamp 2>/dev/null)" != "$(DEPS_SUM)" ]; then \
	  npm ci --no-audit --no-fund && echo "$(DEPS_SUM)" > node_modules/.install-stamp; fi

build: install
	$(COMPILE) src/main.ts src/images/conversion-worker.ts src/lib/sha256-worker.ts --outfile $(BIN)

run: build
	./$(BIN) serve --default-episode $(ARGS)

# The real CLIs (pinned in manifests/clients) come from npm before any test runs:
# the end-to-end tests run them inside a loopback-only network namespace, where npm cannot reach the registry.
clients: install
	$(BUN) src/clients/install-clients.ts

# Debian packages some tests drive (a real Prometheus, Chromium, buildah …), listed in .ci/system-packages.txt.
system-packages:
	bash .ci/system-packages

test: build clients system-packages check
	$(BUN) test --timeout 60000

# The unit tests beside the code (and the fixture checks): no binary, no CLIs, seconds.
unit: install
	$(BUN) test --timeout 60000 ./src ./fixtures ./scripts

e2e: build clients
	./$(BIN) validate --all --out dist/validate

# Not in CI's default run: installs a client's last N npm releases into /var/tmp/ura-compat and runs the
# smoke episode and its end-to-end scenarios against each, then writes docs/compatibility.md
# (ALSO=v1,v2 adds named versions, e.g. an earlier pin).
CLIENT ?= claude
N ?= 3
compat: build clients
	$(BUN) src/compatibility/run-compatibility.ts --client $(CLIENT) --versions $(N) $(if $(ALSO),--also $(ALSO))

check: install
	node_modules/.bin/tsc -p tsconfig.json
	node_modules/.bin/biome check src test fixtures bench scripts
	$(BUN) scripts/check-imports.ts
	$(BUN) scripts/check-module-state.ts
	$(BUN) scripts/check-interfaces.ts

bench: build system-packages
	$(BUN) bench/run.ts

# OCI image (buildah, FROM scratch) + dist/ura-sidecar-<version>.oci.tar; prints size and start-up-to-ready.
image: build system-packages
	bash deploy/image/build-image.sh $(BIN)

clean:
	rm -rf dist node_modules
