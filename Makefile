# BleKit: the two commands are `make demo` and `make test`.
SWIFT ?= swift
SWIFT_BUILD_FLAGS ?=
# Tests run serially within one process by default; Swift Testing parallelises across cores.
SWIFT_TEST_FLAGS ?=

.PHONY: bootstrap build docs check-docs check-conversions check-bluez-names check-raw-closes test test-tsan test-sanitizers fuzz soak bench-stall test-bluez demo bench bench-roundtrip clean

bootstrap:
	@./scripts/bootstrap

build: bootstrap
	$(SWIFT) build $(SWIFT_BUILD_FLAGS)

# Every public symbol has a doc comment (a scan of Sources/, no build).
check-docs:
	@./scripts/check-doc-comments

# Issue 25: outside data never reaches a trapping API (BluetoothUUID(string:) on text, an
# unreviewed integer conversion in the parsers of outside data); a scan, no build.
check-conversions:
	@./scripts/check-trapping-conversions

# Issue 27: BlueZ's names (interfaces, methods, properties, options, errors, flags, path pieces)
# are spelled only in BlueZVocabulary; a scan of BleCore, BleDSL, BleAsync and BleGateway, no build.
check-bluez-names:
	@./scripts/check-bluez-names

# Issue 27: a descriptor is closed by the type that owns it (SeqPacketSocket, UnixFileDescriptor),
# never by a raw close(2) elsewhere (reviewed exceptions in scripts/raw-closes.allowed); no build.
check-raw-closes:
	@./scripts/check-raw-closes

test: bootstrap check-docs check-conversions check-bluez-names check-raw-closes
	$(SWIFT) build --build-tests $(SWIFT_BUILD_FLAGS)
	@# Every code block of README.md, docs/, the DocC catalogs and the READMEs compiles against
	@# the modules just built (a few seconds; the script's header lists the snippet markers).
	@./scripts/check-doc-snippets --bin-path "$$($(SWIFT) build $(SWIFT_BUILD_FLAGS) --show-bin-path)"
	@# The gateway tests' outside decoders (PyPI, into .build's venv) before the tests start; if PyPI
	@# is unreachable those checks skip loudly, so a failure here does not stop the run.
	-@./scripts/gateway-python > /dev/null
	@# bleak (PyPI, into .build's venv) for the outside.bleakCentral scenario, which fails and says why without it.
	-@./scripts/bleak-python > /dev/null
	$(SWIFT) test --skip-build $(SWIFT_TEST_FLAGS)

# The integration scenarios against the real bluetoothd 5.66 in a QEMU guest, and the parity
# report against BleSim (Tests/BleIntegrationTests/Parity/PARITY.md).
test-bluez:
	@BLEKIT_BOOTSTRAP_VM=1 ./scripts/bootstrap
	./scripts/test-bluez

# Sanitized code runs several times slower, and every test shares one loop thread: the tests'
# clock runs this many times slower under the sanitizers (BLEKIT_TEST_TIME_SCALE, read by
# BleSim's TestTime; the waits and the deadlines a test expects to be met scale, what a
# test checks does not change).
SANITIZER_TIME_SCALE ?= 4

# Reports are checked against the reviewed list Tests/Sanitizers/tsan-suppressions.txt (each entry
# says why; child processes the tests start inherit it).
TSAN_ENVIRONMENT = TSAN_OPTIONS=suppressions=$(CURDIR)/Tests/Sanitizers/tsan-suppressions.txt $(SANITIZER_TEST_WIDTH)
# Every test of the process shares BleKit's one loop thread; sanitized code runs that loop several
# times slower, and with every test in flight at once (Swift Testing's default) a bus's Hello
# waited behind the others' work past its 10 s deadline (hundreds of failures, all of that one
# kind). Under the sanitizers this many tests run at a time.
SANITIZER_TEST_WIDTH ?= SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=6

test-tsan: bootstrap
	$(TSAN_ENVIRONMENT) BLEKIT_TEST_TIME_SCALE=$(SANITIZER_TIME_SCALE) $(SWIFT) test --sanitize=thread --scratch-path .build/tsan $(SWIFT_TEST_FLAGS)

# Issue 16: the whole suite under ThreadSanitizer, then AddressSanitizer (errors and leaks checked
# against the reviewed lists Tests/Sanitizers/asan-suppressions.txt and lsan-suppressions.txt).
test-sanitizers: bootstrap
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build/tsan $(SWIFT_BUILD_FLAGS)
	$(TSAN_ENVIRONMENT) BLEKIT_TEST_TIME_SCALE=$(SANITIZER_TIME_SCALE) \
		$(SWIFT) test --skip-build --sanitize=thread --scratch-path .build/tsan $(SWIFT_TEST_FLAGS)
	$(SWIFT) build --build-tests --sanitize=address --scratch-path .build/asan $(SWIFT_BUILD_FLAGS)
	BLEKIT_TEST_TIME_SCALE=$(SANITIZER_TIME_SCALE) \
	$(SANITIZER_TEST_WIDTH) ASAN_OPTIONS=suppressions=$(CURDIR)/Tests/Sanitizers/asan-suppressions.txt \
	LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/Sanitizers/lsan-suppressions.txt:print_suppressions=0 \
		$(SWIFT) test --skip-build --sanitize=address --scratch-path .build/asan $(SWIFT_TEST_FLAGS)

# How long a hostile org.bluez (huge replies, signal floods) blocks the loop; bounded, not a test.
# The benchmarks are a package of their own beside the library (Benchmarks/Package.swift).
bench-stall: bootstrap
	$(SWIFT) build --package-path Benchmarks -c release --product LoopStallBenchmark --scratch-path .build/bench $(SWIFT_BUILD_FLAGS)
	$$($(SWIFT) build --package-path Benchmarks -c release --product LoopStallBenchmark --scratch-path .build/bench --show-bin-path)/LoopStallBenchmark

# Each libFuzzer target for FUZZ_SECONDS (default 60); crashes land in Fuzz/Crashes/. The driver
# is a package of its own beside the library (Fuzz/Package.swift).
fuzz: bootstrap
	./Fuzz/run

# 100,000 DSL commands and 1,000 reconnects with random faults; checks RSS, fds, rules, completions.
soak: bootstrap
	$(SWIFT) build --build-tests $(SWIFT_BUILD_FLAGS)
	BLEKIT_SOAK=1 $(SWIFT) test --skip-build --filter SoakTests $(SWIFT_TEST_FLAGS)

demo: bootstrap
	$(SWIFT) build $(SWIFT_BUILD_FLAGS) --product blekit
	$(SWIFT) build $(SWIFT_BUILD_FLAGS) --product LEDControl
	$(SWIFT) build $(SWIFT_BUILD_FLAGS) --product DataLoggerDemo
	$(SWIFT) run $(SWIFT_BUILD_FLAGS) --skip-build blekit demo

# DocC archives of the public modules (offline, the toolchain's docc, warnings as errors) and a
# documentation-coverage report in .build/docs/coverage.txt; fails unless every public symbol of
# every public module has documentation (scripts/check-doc-coverage lists the ones that do not).
# One module: `make docs MODULES=BleCore`.
docs: bootstrap
	SWIFT=$(SWIFT) ./scripts/build-docs $(MODULES)

bench: bootstrap
	./Benchmarks/run

# Issue 10's side-by-side measure only: BleCore vs libdbus C vs bleak per round trip and per notification.
bench-roundtrip: bootstrap
	./Benchmarks/roundtrip

clean:
	rm -rf .build
