# tests/fuzz/fuzz.mk - libFuzzer targets for every parser of untrusted bytes.
#
#   make -f tests/fuzz/fuzz.mk fuzz         build every target, run each for FUZZ_SECONDS (60)
#   make -f tests/fuzz/fuzz.mk fuzz-smoke   the same, FUZZ_SECONDS=10 by default
#   make -f tests/fuzz/fuzz.mk fuzz-build   build only
#   make -f tests/fuzz/fuzz.mk fuzz-replay  run each target once over its checked-in corpus
#
# The top Makefile may include this file; every name here starts with FUZZ or fuzz.
#
# Targets (tests/fuzz/fuzz_<name>.c), each with a seed corpus in tests/fuzz/corpus/<name>/
# (small valid inputs, plus any input that once crashed, kept as a regression):
#   frame          lib/frame.c over arbitrary bytes (frame_parse, frame_need, frame_str)
#   agent_frames   host -> agent: the agent's reader, dispatch and handlers (file system
#                  calls faked, nothing is spawned: see fakesys.h)
#   daemon_frames  agent -> host: spaced's channel reader (daemon/io/chan.c) and the handler
#                  table (daemon/core/peer.c)
#                  with requests of every kind waiting, and op.c turning frames into answers
#   api_route      api_match over arbitrary URLs, api_check_path over arbitrary paths
#   api_body       request bodies through the real create/exec/... handlers, and the
#                  H_EXEC frame exec builds, checked against the body
#   codec          UTF-8 check, JSON escaping (round trip through jansson), base64
#   passwd         lib/user.c over an arbitrary /etc/passwd and /etc/group (memfds), looked
#                  up by name and by id
#   ports          agent/ports.c over lines of /proc/net/tcp and /proc/net/tcp6
#   net            egress policies (daemon/net/policy.c), the port proxy's Host routing
#                  (daemon/net/proxy_host.c) and DNS messages (daemon/net/dns_wire.c)
#   proxy_http     the port proxy's reading of requests: heads, the token taken out, the
#                  redirect, bodies (Content-Length, chunked), a 101 (daemon/net/proxy_http.c)
#   dockerfile     the Dockerfiles templates are built from, with build arguments
#                  (lib/host/dockerfile*.c)
#   connect        the E2B front's Connect envelopes and proto3 JSON values (e2b/connect.c)
#   multipart      the E2B front's multipart/form-data uploads (e2b/multipart.c), as a real
#                  libmicrohttpd server on loopback hands a body over
#   recipe         an E2B template's steps as a Dockerfile (e2b/recipe.c), read back by the
#                  Dockerfile parser: nothing a value holds becomes another instruction
#   e2b_route      the E2B front's path matcher (e2b/route.c) over arbitrary paths and
#                  patterns, and its list's metadata filter (e2b/query.c)
#
# Needs clang and libclang-rt-14-dev (Debian); FUZZ_CC overrides the compiler.
# New inputs found while fuzzing go to $(FUZZ_DIR)/work/<name>/, crashes to
# $(FUZZ_DIR)/artifacts/; neither is checked in. A crash makes the run fail.

FUZZ_CC       ?= clang
FUZZ_SECONDS  ?= 60
FUZZ_DIR      ?= $(or $(BUILD),build)/fuzz
FUZZ_FLAGS    ?=
FUZZ_TARGETS  := frame agent_frames daemon_frames api_route api_body codec passwd ports net proxy_http dockerfile connect multipart recipe e2b_route

FUZZ_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS   := -std=gnu11 -g -O1 -D_GNU_SOURCE -U_FORTIFY_SOURCE -DSPACE_VERSION='"fuzz"' -I. \
                 -Wall -Wno-unused-parameter $(FUZZ_SAN)
FUZZ_LIBS     := -ljansson -lmicrohttpd -larchive -lcrypto -lpthread

FUZZ_LIB_SRC  := lib/frame.c lib/codec.c lib/buf.c
# The daemon modules on the request and agent-channel paths; the rest (log, store, jobs,
# lifecycle, snapshots, templates, host programs) are tests/fuzz/stubs_daemon.c.
FUZZ_DAEMON_SRC := daemon/api/api.c daemon/api/http_status.c daemon/driver/call.c daemon/api/routes.c daemon/api/api_exec.c daemon/api/api_files.c daemon/api/api_ports.c daemon/api/api_sandbox.c \
                   daemon/api/api_templates.c daemon/api/api_volumes.c daemon/api/api_system.c daemon/api/api_metrics.c daemon/core/stats.c daemon/core/starts.c daemon/base/expo.c lib/host/hash.c \
                   daemon/core/op.c daemon/core/op_output.c daemon/core/op_frame.c daemon/core/entry.c lib/host/err.c daemon/io/timer.c daemon/core/sandbox.c daemon/core/sandbox_view.c daemon/core/sandbox_live.c daemon/core/sandbox_create.c \
                   daemon/core/sandbox_net.c daemon/core/sandbox_adopt.c daemon/core/ready.c daemon/core/pool.c \
                   daemon/core/state.c daemon/base/reaper.c daemon/base/clock.c daemon/io/chan.c \
                   daemon/io/loop.c daemon/core/peer.c daemon/core/proc.c daemon/core/isolation.c \
                   daemon/net/policy.c daemon/core/metrics.c
FUZZ_HARNESS_SRC := tests/fuzz/stubs_daemon.c tests/fuzz/harness_daemon.c
# The agent modules, compiled with the fake system calls.
FUZZ_AGENT_SRC := agent/conn.c agent/dispatch.c agent/proc.c agent/files.c agent/xfer.c \
                  lib/user.c agent/fsuser.c agent/spawn.c agent/identity.c agent/oom.c agent/oom_kernel.c agent/ports.c agent/watch.c

fuzz_obj = $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(1))

FUZZ_SRC_frame         := lib/frame.c
FUZZ_SRC_codec         := lib/codec.c
FUZZ_SRC_connect       := e2b/connect.c lib/codec.c lib/buf.c
FUZZ_SRC_multipart     := e2b/multipart.c
FUZZ_SRC_e2b_route     := e2b/route.c e2b/query.c
FUZZ_SRC_recipe        := e2b/recipe.c lib/host/dockerfile.c lib/host/dockerfile_lex.c \
                          lib/host/dockerfile_words.c lib/host/dockerfile_ref.c \
                          lib/host/dockerfile_canon.c lib/host/err.c
FUZZ_SRC_passwd        := lib/user.c
FUZZ_SRC_ports         := agent/ports.c
FUZZ_SRC_net           := daemon/net/policy.c daemon/net/proxy_host.c daemon/net/dns_wire.c lib/host/err.c
FUZZ_SRC_proxy_http    := daemon/net/proxy_http.c
FUZZ_SRC_dockerfile    := lib/host/dockerfile.c lib/host/dockerfile_lex.c \
                          lib/host/dockerfile_words.c lib/host/dockerfile_ref.c \
                          lib/host/dockerfile_canon.c lib/host/err.c
FUZZ_SRC_api_route     := $(FUZZ_DAEMON_SRC) $(FUZZ_HARNESS_SRC) $(FUZZ_LIB_SRC)
FUZZ_SRC_api_body      := $(FUZZ_DAEMON_SRC) $(FUZZ_HARNESS_SRC) $(FUZZ_LIB_SRC)
FUZZ_SRC_daemon_frames := $(FUZZ_DAEMON_SRC) $(FUZZ_HARNESS_SRC) $(FUZZ_LIB_SRC)
FUZZ_AGENT_OBJ         := $(patsubst %.c,$(FUZZ_DIR)/obj/fake/%.o,$(FUZZ_AGENT_SRC)) \
                          $(call fuzz_obj,tests/fuzz/fakesys.c $(FUZZ_LIB_SRC))

FUZZ_BINS := $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)

.PHONY: fuzz fuzz-smoke fuzz-build fuzz-replay fuzz-clean
fuzz-build: $(FUZZ_BINS)

# Ordinary objects: instrumented for coverage (fuzzer-no-link) and the sanitizers.
$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $< (fuzz)"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

# Agent objects: the same, with fakesys.h force-included; spawn.c's spawn_start is
# renamed out of the way of the one in fakesys.c that starts nothing.
$(FUZZ_DIR)/obj/fake/%.o: %.c tests/fuzz/fakesys.h
	@mkdir -p $(dir $@)
	@echo "  CC      $< (fuzz, fake system calls)"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -include tests/fuzz/fakesys.h \
		-Dspawn_start=spawn_start_real -MMD -MP -c $< -o $@

$(FUZZ_DIR)/fuzz_agent_frames: tests/fuzz/fuzz_agent_frames.c $(FUZZ_AGENT_OBJ)
	@echo "  LD      $@"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(FUZZ_LIBS)

$(FUZZ_DIR)/fuzz_daemon_frames: tests/fuzz/fuzz_daemon_frames.c \
		$(call fuzz_obj,$(FUZZ_SRC_daemon_frames))
	@echo "  LD      $@"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -Idaemon -fsanitize=fuzzer -o $@ $< $(filter %.o,$^) $(FUZZ_LIBS)

# The other targets: their own file plus the objects listed for them.
define FUZZ_LINK
$(FUZZ_DIR)/fuzz_$(1): tests/fuzz/fuzz_$(1).c $(call fuzz_obj,$(FUZZ_SRC_$(1)))
	@echo "  LD      $$@"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $$@ $$^ $(FUZZ_LIBS)
endef
$(foreach t,frame codec api_route api_body passwd ports net proxy_http dockerfile connect multipart recipe e2b_route,$(eval $(call FUZZ_LINK,$(t))))

# Runs every target for FUZZ_SECONDS; the seed corpus is read, new inputs go to work/.
fuzz-smoke: FUZZ_SECONDS = 10
fuzz fuzz-smoke: $(FUZZ_BINS)
	@set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_DIR)/work/$$t $(FUZZ_DIR)/artifacts; \
		echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
		$(FUZZ_DIR)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=20 -rss_limit_mb=2048 \
			-max_len=131072 -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/artifacts/$$t- \
			$(FUZZ_FLAGS) $(FUZZ_DIR)/work/$$t tests/fuzz/corpus/$$t 2>$(FUZZ_DIR)/fuzz_$$t.log \
			|| { tail -40 $(FUZZ_DIR)/fuzz_$$t.log; echo "fuzz_$$t FAILED: see $(FUZZ_DIR)/fuzz_$$t.log"; exit 1; }; \
		grep -E "stat::number_of_executed_units|stat::peak_rss_mb" $(FUZZ_DIR)/fuzz_$$t.log | tr '\n' ' '; echo; \
	done

# Every checked-in input, once: the regression check for past crashes.
fuzz-replay: $(FUZZ_BINS)
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "== fuzz_$$t over tests/fuzz/corpus/$$t"; \
		$(FUZZ_DIR)/fuzz_$$t -runs=0 tests/fuzz/corpus/$$t 2>$(FUZZ_DIR)/replay_$$t.log \
			|| { tail -40 $(FUZZ_DIR)/replay_$$t.log; exit 1; }; \
	done

fuzz-clean:
	rm -rf $(FUZZ_DIR)

-include $(shell find $(FUZZ_DIR)/obj -name '*.d' 2>/dev/null)
