# space - build, set up and test.  See README.md.
#
#   make            build everything into build/
#   make deps       install what the build and the tests need (apt-get); the only step that
#                   touches the network
#   make up         deps, build, default template, start spaced in the background
#   make down       stop the spaced that `make up` started
#   make install    the programs, the unit, the configuration file, man pages, bash completion
#                   into DESTDIR/PREFIX (dist/dist.mk); make deb: the Debian packages into
#                   build/deb/; make deb-test: their test (tests/deb, not part of make test)
#   make test       deps, build, unit tests, agent protocol tests, end-to-end tests, SDK tests,
#                   the microVM driver's tests, the quick compatibility subset (compat-quick),
#                   the escape and abuse suite, the end-to-end, SDK and escape suites again
#                   with every sandbox a microVM, and every fuzz target for 5 s (what CI runs)
#   make quick      the edit-test loop: unit tests, the layer check, agent protocol tests and a
#                   smoke of the end-to-end suite (a few minutes)
#   make stress     the lifecycle stress tests with SPECIFICATION.md's full counts, both kinds,
#                   and the crash points on microVMs
#   make layers     fails if the modules of any program call each other in a circle
#                   (scripts/layers.py), or if a program includes or compiles another's
#                   folder (scripts/includes.py)
#   make asan       build daemon, CLI and unit tests with AddressSanitizer/UBSan into build-asan/
#   make bench      benchmarks against raw runsc (bench/run.py; SPECIFICATION.md)
#   make security   the escape and abuse suite (tests/security)
#   make fuzz       every fuzz target for 60 s each (tests/fuzz/fuzz.mk; fuzz-smoke: 10 s)
#   make compat     CPython's own tests and Node.js, Java and Go programs, natively and in a
#                   sandbox, side by side; rewrites the table in docs/compat.md (compat-quick:
#                   a handful of modules and the runtimes)

CC      ?= cc
BUILD   ?= build
VERSION := 0.1.0
PREFIX  ?= /usr/local

WARN    := -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wformat=2 -Wstrict-prototypes \
           -Wmissing-prototypes -Wvla -Wno-unused-parameter \
           -Wno-format-truncation
CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 $(WARN) -D_GNU_SOURCE -DSPACE_VERSION='"$(VERSION)"' -I.
SAN     :=

LIB_SRC     := $(wildcard lib/*.c)
# the HTTP client of spaced's API (lib/client/): for the programs that link libcurl
CLIENT_SRC  := $(wildcard lib/client/*.c)
DAEMON_SRC  := $(wildcard daemon/*.c daemon/*/*.c)
CLI_SRC     := $(wildcard cli/*.c)
# what spaced and space-build share (lib/host/, libspace-host.a): errors, hashes, host
# programs, folders, the machine's cache and the Dockerfile parser; libc and the libraries
# both link, never the agent's static build
HOST_SRC    := $(wildcard lib/host/*.c)
# space-build (builder/): the template builder spaced starts; it parses Dockerfiles and keeps
# its steps in the machine's cache as spaced does (libspace-host.a), and speaks to spaced with
# the API's client (libspace-client.a).
BUILDER_SRC := $(wildcard builder/*.c)
AGENT_SRC   := $(wildcard agent/*.c)
# space-e2b (e2b/): the E2B front spaced starts for --e2b-listen; it asks spaced with the
# API's client (libspace-client.a).
E2B_SRC     := $(wildcard e2b/*.c)

LIB_OBJ     := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLIENT_OBJ  := $(CLIENT_SRC:%.c=$(BUILD)/%.o)
HOST_OBJ    := $(HOST_SRC:%.c=$(BUILD)/%.o)
DAEMON_OBJ  := $(DAEMON_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ     := $(CLI_SRC:%.c=$(BUILD)/%.o)
AGENT_OBJ   := $(AGENT_SRC:%.c=$(BUILD)/agent-static/%.o) $(LIB_SRC:%.c=$(BUILD)/agent-static/%.o)

# The unit tests and what each one links: UNIT_TESTS, UNIT_SRC, UNIT_BIN.
include tests/unit/unit.mk

# Every suite names its ten slowest tests at its end: where a suite's time goes, in every run.
PYTEST := /usr/bin/python3 -m pytest -q --durations=10

DAEMON_LIBS := -lmicrohttpd -ljansson -lsqlite3 -lcrypto -larchive -lnftables -lmnl -lsystemd -lpthread
CLI_LIBS    := -lcurl -ljansson -lpthread
BUILDER_LIBS := -lcurl -ljansson -lcrypto -larchive -lpthread
E2B_LIBS    := -lmicrohttpd -lcurl -ljansson -lcrypto -larchive -lz -lpthread

# the microvm isolation: QEMU, and mkfs.erofs for the templates' block images
VM_APT_PACKAGES := qemu-system-x86 erofs-utils
APT_PACKAGES := build-essential libmicrohttpd-dev libjansson-dev libsqlite3-dev \
                libcurl4-openssl-dev libssl-dev libsystemd-dev libcmocka-dev python3-pytest runsc mmdebstrap curl \
                e2fsprogs util-linux clang libclang-rt-14-dev openssl iproute2 nftables libnftables-dev libmnl-dev libarchive-dev chromium chromium-driver python3-selenium libjs-chart.js libjs-term.js skopeo umoci busybox-static docker-registry tmux \
                prometheus \
                $(VM_APT_PACKAGES)

.PHONY: all programs deps compat-deps up down test quick stress layers docs-check unit agent-test e2e e2e-vm e2e-smoke net-test net-test-vm sdk-test sdk-vm e2b-test e2b-test-vm security security-vm \
	compat compat-quick asan bench bench-quick next clean
RECIPES := $(BUILD)/recipes/code-interpreter-v1/.made
# what is installed (make install, the Debian package: dist/dist.mk): all but the unit tests
PROGRAMS := $(BUILD)/spaced $(BUILD)/space $(BUILD)/space-build $(BUILD)/space-e2b $(BUILD)/space-agent \
            $(BUILD)/libspace-shim.so $(RECIPES) $(BUILD)/ui/.made
all: $(PROGRAMS) $(UNIT_BIN)
programs: $(PROGRAMS)

# The web console's files (docs/console.md), beside spaced as its --ui default: build/ui/.
$(BUILD)/ui/.made: $(wildcard ui/*)
	@echo "  UI      $(dir $@)"
	@rm -rf $(dir $@) && mkdir -p $(dir $@) && cp ui/* $(dir $@) && touch $@


# The recipes of the templates spaced builds on first use (daemon/core/recipe.h), beside it:
# build/recipes/NAME/ is the build context of template NAME.
$(BUILD)/recipes/code-interpreter-v1/.made: $(wildcard sandbox/interpreter/*)
	@echo "  RECIPE  $(dir $@)"
	@rm -rf $(dir $@) && mkdir -p $(dir $@) && cp sandbox/interpreter/* $(dir $@) && touch $@

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) -MMD -MP -c $< -o $@

$(BUILD)/agent-static/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $< (agent)"
	@$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libspace.a: $(LIB_OBJ)
	@ar rcs $@ $^

$(BUILD)/libspace-client.a: $(CLIENT_OBJ)
	@ar rcs $@ $^

$(BUILD)/libspace-host.a: $(HOST_OBJ)
	@ar rcs $@ $^

$(BUILD)/spaced: $(DAEMON_OBJ) $(BUILD)/libspace-host.a $(BUILD)/libspace.a
	@echo "  LD      $@"
	@$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

$(BUILD)/space-build: $(BUILDER_SRC:%.c=$(BUILD)/%.o) $(BUILD)/libspace-host.a $(BUILD)/libspace-client.a \
		$(BUILD)/libspace.a
	@echo "  LD      $@"
	@$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -o $@ $^ $(BUILDER_LIBS)

$(BUILD)/space-e2b: $(E2B_SRC:%.c=$(BUILD)/%.o) $(BUILD)/libspace-client.a $(BUILD)/libspace.a
	@echo "  LD      $@"
	@$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -o $@ $^ $(E2B_LIBS)

$(BUILD)/space: $(CLI_OBJ) $(BUILD)/libspace-client.a $(BUILD)/libspace.a
	@echo "  LD      $@"
	@$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -o $@ $^ $(CLI_LIBS)

# The agent runs as PID 1 inside sandboxes whose root filesystem we do not control: static.
$(BUILD)/space-agent: $(AGENT_OBJ)
	@echo "  LD      $@ (static)"
	@$(CC) $(CFLAGS) $(LDFLAGS) -static -o $@ $^

# Preloaded into sandboxed commands to work around runsc limits (see the source).
$(BUILD)/libspace-shim.so: agent/shim/statx.c agent/shim/termios.c
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -fPIC -shared -nostartfiles -o $@ $^

# A unit test links its own object, the sources tests/unit/unit.mk lists for it and their
# libraries: $(BUILD)/tests/lib/test_buf from tests/unit/lib/test_buf.c and UNIT_test_buf.
define UNIT_LINK
$(BUILD)/tests/$(1): $(BUILD)/tests/unit/$(1).o $(patsubst %.c,$(BUILD)/%.o,$(UNIT_$(notdir $(1))))
	@mkdir -p $$(dir $$@)
	@echo "  LD      $$@"
	@$$(CC) $$(CFLAGS) $$(SAN) -o $$@ $$^ -lcmocka $(UNIT_LIBS_$(notdir $(1)))
endef
$(foreach t,$(UNIT_TESTS),$(eval $(call UNIT_LINK,$(t))))

# Installs those of the packages $(1) that are missing (apt-get).
# apt-get install of the packages given, at once (for a recipe line's own condition)
APT_INSTALL_NOW = { DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(1); }

define APT_INSTALL
	@missing=$$(for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
endef

# Node.js and npm (the E2B suite's SDK) from Debian only where neither is there: a machine may
# have both from elsewhere (NodeSource's nodejs carries its own npm, which Debian's conflicts with).
deps:
	$(call APT_INSTALL,$(APT_PACKAGES))
	@command -v node >/dev/null && command -v npm >/dev/null || $(call APT_INSTALL_NOW,nodejs npm)

# What the compatibility suite's native side runs: the packages of its template
# (tests/compat/suite.py, PACKAGES).
COMPAT_PACKAGES = $(shell /usr/bin/python3 tests/compat/suite.py)
compat-deps:
	$(call APT_INSTALL,$(COMPAT_PACKAGES))

up: deps all
	./scripts/up.sh

down:
	./scripts/down.sh

# Runs every unit test, each under a timeout, and fails if any failed (naming them).
unit: $(UNIT_BIN)
	@failed=; for t in $(UNIT_BIN); do echo "== $$t"; \
		timeout $(UNIT_SECONDS) $$t || failed="$$failed $$t"; done; \
	if [ -n "$$failed" ]; then echo "unit tests FAILED:$$failed"; exit 1; fi

agent-test: $(BUILD)/space-agent
	$(PYTEST) tests/agent

# spaced, its agent and the shim built again as the next version (VERSION+next, in build/next/), for the
# upgrade test (tests/e2e/test_upgrade.py): sandboxes made under this version live on under that one.
NEXT := $(BUILD)/next
next:
	+@$(MAKE) --no-print-directory BUILD=$(NEXT) VERSION=$(VERSION)+next $(NEXT)/spaced $(NEXT)/space-agent \
		$(NEXT)/libspace-shim.so

e2e: all next
	$(PYTEST) tests/e2e

# The end-to-end suite again with every sandbox a microVM (docs/microvm.md lists what it skips),
# but for the files that test the API's surface (input, the CLI, names, tenants, quotas, TLS,
# templates): what they check does not depend on the kind of sandbox (the CLI's lifecycle
# commands are requests of the API, whose lifecycle e2e-vm checks directly).
# Builds (test_build.py) run their steps under gVisor whatever the default kind; the gVisor
# suite starts a microVM of a built template too. The cache (test_cache.py) and the programs'
# versions (test_version.py) have no sandbox at all; what spaced tells systemd (test_systemd.py)
# does not depend on the kind of its sandboxes.
E2E_SURFACE := test_bad_input.py test_config.py test_cli.py test_cli_lifecycle.py test_names.py test_tenants.py test_quotas.py \
               test_tls.py test_templates.py test_build.py test_cache.py test_version.py test_systemd.py
# The crash points and the lifecycle stress on microVMs (about 4 minutes) are make stress's:
# the lifecycle code they drive is the one the gVisor suite crashes at every step.
E2E_VM_STRESS := test_crash_points.py test_lifecycle_stress.py
e2e-vm: all vm-guest next
	SPACE_TEST_ISOLATION=microvm $(PYTEST) tests/e2e $(E2E_SURFACE:%=--ignore=tests/e2e/%) \
		$(E2E_VM_STRESS:%=--ignore=tests/e2e/%)

# The lifecycle stress tests with SPECIFICATION.md's full counts (make test runs fewer, and on
# gVisor only), and the crash points on microVMs.
stress: all vm-guest
	SPACE_TEST_STRESS=full $(PYTEST) tests/e2e/test_lifecycle_stress.py
	SPACE_TEST_STRESS=full SPACE_TEST_ISOLATION=microvm $(PYTEST) $(E2E_VM_STRESS:%=tests/e2e/%)

# Sandboxes' networks against a made-up internet in namespaces the suite makes (tests/net), on
# each kind of sandbox.
net-test: all
	$(PYTEST) tests/net

net-test-vm: all vm-guest
	SPACE_TEST_ISOLATION=microvm $(PYTEST) tests/net

# A few end-to-end files that touch every layer (create, exec, files, lifecycle) for `make quick`.
E2E_SMOKE := tests/e2e/test_daemon.py tests/e2e/test_files.py tests/e2e/test_lifecycle.py
e2e-smoke: all
	$(PYTEST) $(E2E_SMOKE)

# No circle of calls among the modules of any program: each layer reaches the ones above it
# only through the tables and callbacks it is given (docs/architecture.md). Each program is
# looked at with everything it links. And no .c file over 800 lines or function over 80
# (scripts/sizes.py).
LAYERS_PROGRAMS := spaced: $(DAEMON_OBJ) $(HOST_OBJ) $(LIB_OBJ) \
                   space-agent: $(AGENT_OBJ) \
                   space-build: $(BUILDER_SRC:%.c=$(BUILD)/%.o) $(HOST_OBJ) $(CLIENT_OBJ) $(LIB_OBJ) \
                   space: $(CLI_OBJ) $(CLIENT_OBJ) $(LIB_OBJ) \
                   space-e2b: $(E2B_SRC:%.c=$(BUILD)/%.o) $(CLIENT_OBJ) $(LIB_OBJ) \
                   libspace: $(LIB_OBJ) \
                   libspace-client: $(CLIENT_OBJ) $(LIB_OBJ) \
                   libspace-host: $(HOST_OBJ) $(LIB_OBJ)
# Each program's folder and the sources it compiles besides lib/'s archives: it includes and
# compiles only lib/, proto/ and its own folder (scripts/includes.py), and lib/ and proto/
# include only each other.
PROGRAM_FOLDERS := daemon: $(DAEMON_SRC) \
                   agent: $(AGENT_SRC) $(LIB_SRC) \
                   builder: $(BUILDER_SRC) \
                   cli: $(CLI_SRC) \
                   e2b: $(E2B_SRC)
layers: all
	/usr/bin/python3 scripts/includes.py $(PROGRAM_FOLDERS)
	/usr/bin/python3 scripts/layers.py --check $(LAYERS_PROGRAMS)
	/usr/bin/python3 scripts/sizes.py

# The documents against the code: every limit a document names has the code's number
# (docs_limits.py); every route of the table is in openapi.yaml and api.md and they name no
# other (docs_routes.py); the files, links and tests the documents cite exist, each test a
# test function of its file (docs_refs.py); the README's tour names every top folder and
# nothing that is not there (docs_tree.py). Every script runs, each naming every difference it
# finds; the check fails if any found one.
DOCS_CHECKS := docs_limits docs_routes docs_refs docs_tree
docs-check:
	@rc=0; for c in $(DOCS_CHECKS); do /usr/bin/python3 scripts/$$c.py || rc=1; done; exit $$rc

quick: deps all
	$(MAKE) unit
	$(MAKE) layers
	$(MAKE) docs-check
	$(MAKE) agent-test
	$(MAKE) e2e-smoke

sdk-test: all
	$(PYTEST) tests/sdk

# The E2B front driven by E2B's own JavaScript SDK (tests/e2b/run.py installs it, once per
# machine, outside the checkout).
e2b-test: all
	/usr/bin/python3 tests/e2b/run.py

# The E2B files whose behaviour depends on the kind of sandbox, with every sandbox a microVM
# (not part of make test; docs/e2b.md says how long it takes).
E2B_VM_TESTS := commands files defaults pty signed lifecycle
e2b-test-vm: all vm-guest
	SPACE_TEST_ISOLATION=microvm /usr/bin/python3 tests/e2b/run.py $(E2B_VM_TESTS:%=tests/e2b/%.test.mjs)

# The SDK and escape suites with every sandbox a microVM. make test runs security-vm; the SDK is a
# client of the API, which e2e-vm drives on microVMs already, so sdk-vm (4-9 minutes here) is
# left to its own target: the hour make test may take is spent on what depends on the kind.
sdk-vm: all vm-guest
	SPACE_TEST_ISOLATION=microvm $(PYTEST) tests/sdk
security-vm: all vm-guest
	SPACE_TEST_ISOLATION=microvm SPACE_SECURITY_RESULTS=$(BUILD)/security-microvm.json $(PYTEST) tests/security; rc=$$?; \
	/usr/bin/python3 tests/security/report.py $(BUILD)/security-microvm.json --kind microvm --update docs/security.md \
		|| rc=1; exit $$rc

# The escape and abuse suite (about 12 minutes) and the fuzz targets (clang's libFuzzer), both
# part of `make test`.
# The run rewrites the results table in docs/security.md, passed or not.
security: all
	$(PYTEST) tests/security; rc=$$?; \
	/usr/bin/python3 tests/security/report.py --update docs/security.md || rc=1; exit $$rc

# The compatibility suite (tests/compat/run.py; docs/compat.md says how long each takes).
compat: deps compat-deps all
	/usr/bin/python3 tests/compat/run.py --update docs/compat.md

compat-quick: deps compat-deps all
	/usr/bin/python3 tests/compat/run.py --quick

include tests/fuzz/fuzz.mk

# make install, the Debian package (make deb) and its test (make deb-test)
include dist/dist.mk

# The microVM guest (docs/microvm.md): space-vm-guest prepares the guest kernel and the
# initramfs in the cache through the daemon's own code; `make vm-guest` is the setup step that
# may download the kernel (apt-get download), `make vm-test` boots it under QEMU (TCG).
VM_CACHE     ?= /var/cache/space
VM_GUEST_SRC := tests/vm/guest.c daemon/driver/vm_guest.c daemon/driver/kmod.c daemon/driver/cpio.c \
                lib/host/cache.c daemon/store/template.c daemon/store/template_oci.c daemon/store/template_use.c daemon/driver/vm_image.c \
                daemon/store/store.c daemon/store/store_volume.c daemon/store/schema.c daemon/core/state.c \
                lib/host/dir.c lib/host/spawn.c lib/host/hash.c daemon/base/log.c \
                daemon/base/clock.c lib/host/err.c lib/buf.c
$(BUILD)/space-vm-guest: $(VM_GUEST_SRC:%.c=$(BUILD)/%.o)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS) $(SAN) -o $@ $^ -ljansson -lsqlite3 -lcrypto -larchive -lpthread

.PHONY: vm-deps vm-guest vm-test
vm-deps:
	$(call APT_INSTALL,$(VM_APT_PACKAGES))

vm-guest: vm-deps $(BUILD)/space-vm-guest $(BUILD)/space-agent
	$(BUILD)/space-vm-guest --cache-dir $(VM_CACHE) --agent $(BUILD)/space-agent --template default

vm-test: vm-guest
	SPACE_VM_CACHE=$(VM_CACHE) $(PYTEST) tests/vm


# make test fuzzes each target for 5 s (make fuzz: 60 s): the suites run on both kinds of
# sandbox, and the whole must stay under an hour on this 2-core machine.
# The gVisor suites and the microVM suites run as two chains at once (about 40 and 41 minutes
# side by side here, alone; the SDK's and the E2B front's suites, clients of the API on gVisor
# sandboxes, ride in the gVisor chain): every test spaced has its own state, socket, transit
# range and DNS port (tests/support/spacetest.py, net_slot), and what they share, the machine's
# cache, is locked. A suite's output goes to $(BUILD)/test-logs/SUITE.log and is printed whole
# when the suite ends, one suite at a time.
TEST_FUZZ_SECONDS ?= 5
TEST_GVISOR  := e2e net-test compat-quick security sdk-test e2b-test
TEST_MICROVM := vm-test e2e-vm net-test-vm security-vm
.PHONY: test-gvisor test-microvm
test: deps all
	$(MAKE) unit
	$(MAKE) layers
	$(MAKE) docs-check
	$(MAKE) agent-test
	$(MAKE) vm-guest
	$(MAKE) next
	$(MAKE) -j2 test-gvisor test-microvm
	$(MAKE) fuzz FUZZ_SECONDS=$(TEST_FUZZ_SECONDS)

# Each chain runs all its suites, then fails if any failed (naming them).
TEST_LOGS := $(BUILD)/test-logs
define TEST_CHAIN
	+@mkdir -p $(TEST_LOGS); failed=; for t in $(1); do \
		echo "== $(2): $$t started $$(date +%T)"; \
		$(MAKE) --no-print-directory $$t > $(TEST_LOGS)/$$t.log 2>&1 && r=passed || { r=FAILED; failed="$$failed $$t"; }; \
		flock $(TEST_LOGS)/.print sh -c 'cat "$$1"; echo "== $(2): $$2 $$3 $$(date +%T)"' - $(TEST_LOGS)/$$t.log $$t $$r; \
	done; \
	if [ -n "$$failed" ]; then echo "$(2) suites FAILED:$$failed"; exit 1; fi
endef
test-gvisor: all
	$(call TEST_CHAIN,$(TEST_GVISOR),gVisor)
test-microvm: all vm-guest
	$(call TEST_CHAIN,$(TEST_MICROVM),microVM)

asan:
	$(MAKE) BUILD=build-asan SAN='-fsanitize=address,undefined -fno-omit-frame-pointer' \
		build-asan/spaced build-asan/space $(UNIT_TESTS:%=build-asan/tests/%)

# The figures of idle cost (exec beside idle sandboxes, spaced's memory, the host CPU they use,
# a noisy neighbour) in a few minutes, with fewer samples and 10 and 20 idle sandboxes.
bench-quick: all
	/usr/bin/python3 bench/run.py --quick --only exec,density,noisy

bench: all
	/usr/bin/python3 bench/run.py
	/usr/bin/python3 bench/net.py
	/usr/bin/python3 bench/templates.py
	/usr/bin/python3 bench/e2b.py
	/usr/bin/python3 bench/streams.py

clean:
	rm -rf build build-asan

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
