# pg_predict: a thin driver around CMake (build dir: build/).
#   make          configure + build (extension and unit tests)
#   make build-extension   configure + build the extension alone (what install and run need)
#   make install  build the extension, install it into pg_config's dirs (root or sudo)
#   make run      deps + build + install, start a demo PostgreSQL in ./.pgdata, show predictions
#   make test     deps + build + install, then every test suite; last line 'N passed, M failed'
#   make stop     stop the demo server started by `make run`
#   make wheel    the Python client as a wheel in dist/ (nothing written into python/)
#   make deb      the Debian package postgresql-15-pg-predict (and its -dbgsym) in dist/
#   make clean    remove build/
BUILD_DIR   ?= build
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE       ?= cmake
CMAKE_FLAGS ?=
SUDO        := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: all build build-extension configure install deps run test stop clean wheel deb

all: build

$(BUILD_DIR)/Makefile:
	$(CMAKE) -S . -B $(BUILD_DIR) $(CMAKE_FLAGS)

configure: $(BUILD_DIR)/Makefile

# Configures again first (seconds): packages installed since (libgtest-dev) are found.
build:
	$(CMAKE) -S . -B $(BUILD_DIR) $(CMAKE_FLAGS) >/dev/null
	$(CMAKE) --build $(BUILD_DIR) -j $(JOBS)

build-extension: $(BUILD_DIR)/Makefile
	$(CMAKE) --build $(BUILD_DIR) -j $(JOBS) --target pg_predict

install: build-extension
	$(SUDO) $(CMAKE) --install $(BUILD_DIR)

deps:
	bash scripts/install-deps.sh

run:
	bash scripts/run-demo.sh

test:
	bash scripts/test.sh

stop:
	bash scripts/run-demo.sh --stop

clean:
	rm -rf $(BUILD_DIR)

wheel:
	bash scripts/wheel.sh

deb:
	bash scripts/deb.sh

# make bench: install, then the benchmark (bench/README.md); e.g. make bench BENCH_ARGS=--quick
.PHONY: bench
bench: install
	/usr/bin/python3 bench/run.py $(BENCH_ARGS)

# make bench-deps: LightGBM for bench/deep_trees.py, built from third_party/lightgbm/ (bench only)
.PHONY: bench-deps
bench-deps:
	bash scripts/install-lightgbm.sh
