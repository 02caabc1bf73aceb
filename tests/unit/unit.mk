# tests/unit/unit.mk - what each unit test links (included by the Makefile).
#
# A unit test links its own file, the module it tests and what that module declares it
# needs, nothing else: a test that needs a new module to link is a module that grew a new
# dependency, and this file is where that shows. The tree under tests/unit/ mirrors the
# source tree (tests/unit/lib/test_buf.c tests lib/buf.c); the binary of
# tests/unit/<path>/test_<m>.c is $(BUILD)/tests/<path>/test_<m>.
#
# For every test, by the file's base name:
#   UNIT_<test>       the sources it links besides itself
#   UNIT_LIBS_<test>  the libraries they need (cmocka is added for every test)

UNIT_TESTS := lib/test_buf lib/test_codec lib/test_frame \
              daemon/api/test_api daemon/core/test_metrics daemon/core/test_state daemon/core/test_proc daemon/core/test_isolation daemon/driver/test_oci \
              daemon/store/test_store daemon/store/test_schema daemon/store/test_template daemon/io/test_timer daemon/io/test_chan \
              lib/test_user agent/test_identity daemon/driver/test_cpio daemon/driver/test_kmod daemon/driver/test_vm_log daemon/driver/test_jail daemon/driver/test_agent_file agent/test_vport \
              agent/test_fwcfg agent/test_ports daemon/net/test_policy daemon/net/test_proxy_host daemon/net/test_proxy_http \
              daemon/net/test_dns_wire lib/host/test_dockerfile lib/host/test_dockerfile_words \
              lib/host/test_dockerfile_canon lib/host/test_dir daemon/base/test_expo daemon/base/test_log \
              e2b/test_connect e2b/test_multipart e2b/test_route e2b/test_query daemon/core/test_entry daemon/core/test_starts \
              daemon/api/test_ui daemon/core/test_op daemon/core/test_sandbox \
              daemon/core/test_lifecycle

UNIT_test_buf        := lib/buf.c
UNIT_LIBS_test_buf   :=

UNIT_test_codec      := lib/codec.c
UNIT_LIBS_test_codec := -ljansson

UNIT_test_frame      := lib/frame.c
UNIT_LIBS_test_frame :=

UNIT_test_connect      := e2b/connect.c lib/codec.c lib/buf.c
UNIT_LIBS_test_connect := -ljansson

# the front's route tables, matched
UNIT_test_route      := e2b/route.c
UNIT_LIBS_test_route :=

# the list's metadata filter, decoded by libmicrohttpd
UNIT_test_query      := e2b/query.c
UNIT_LIBS_test_query := -lmicrohttpd -ljansson

# on a real libmicrohttpd server on loopback
UNIT_test_multipart      := e2b/multipart.c lib/buf.c
UNIT_LIBS_test_multipart := -lmicrohttpd

# log lines on the journal's stream
UNIT_test_log        := daemon/base/log.c
UNIT_LIBS_test_log   :=

# the exposition format, and the counters written in it
UNIT_test_expo        := daemon/base/expo.c daemon/core/stats.c lib/buf.c
UNIT_LIBS_test_expo   :=

# a process's output on its way to its readers, and the credit it gives back: the agent's
# channel and libmicrohttpd's resume of a connection are the test's fakes (op.c still names
# libmicrohttpd's other calls, which the test never reaches)
UNIT_test_op      := daemon/core/op.c daemon/core/op_output.c daemon/core/op_frame.c daemon/core/proc.c \
                     daemon/core/entry.c daemon/core/stats.c daemon/base/expo.c lib/host/err.c \
                     daemon/base/log.c daemon/base/clock.c daemon/io/loop.c daemon/io/timer.c \
                     lib/buf.c lib/codec.c lib/frame.c
UNIT_LIBS_test_op := -ljansson -lpthread

# the registry of sandboxes; the store, the agent's channel, the requests, d->lock and the
# kernel's randomness are the test's fakes
UNIT_test_sandbox      := daemon/core/sandbox.c daemon/core/isolation.c daemon/core/proc.c daemon/core/state.c \
                          daemon/driver/call.c daemon/base/expo.c lib/host/err.c daemon/base/log.c daemon/base/clock.c lib/buf.c lib/frame.c
UNIT_LIBS_test_sandbox := -ljansson -lpthread

UNIT_test_starts     := daemon/core/starts.c daemon/base/expo.c lib/buf.c
UNIT_LIBS_test_starts := -lpthread

# the console's names, checked and opened under its folder
UNIT_test_ui         := daemon/api/ui.c daemon/api/http_status.c lib/host/err.c
UNIT_LIBS_test_ui    :=

UNIT_test_dir        := lib/host/dir.c
UNIT_LIBS_test_dir   :=

UNIT_test_state      := daemon/core/state.c
UNIT_LIBS_test_state :=

# the kinds and their drivers, with stand-in drivers of its own
# process records: the output kept for a process's next reader
UNIT_test_proc      := daemon/core/proc.c daemon/base/clock.c lib/buf.c lib/frame.c
UNIT_LIBS_test_proc := -ljansson

UNIT_test_isolation      := daemon/core/isolation.c daemon/driver/call.c daemon/base/clock.c daemon/base/expo.c lib/buf.c lib/host/err.c daemon/base/log.c
UNIT_LIBS_test_isolation := -ljansson -lpthread

UNIT_test_oci        := daemon/driver/oci.c
UNIT_LIBS_test_oci   := -ljansson

UNIT_test_store      := daemon/store/store.c daemon/store/store_volume.c daemon/store/schema.c daemon/core/state.c \
                        tests/unit/daemon/store/store_check.c
UNIT_LIBS_test_store := -lsqlite3 -ljansson
# the schema's steps, opened through the store as spaced opens its database
UNIT_test_schema      := $(UNIT_test_store)
UNIT_LIBS_test_schema := $(UNIT_LIBS_test_store)

# the template cache: its parsing and keys (the build itself runs in the e2e suite)
UNIT_test_template      := daemon/store/template.c daemon/store/template_oci.c daemon/store/template_use.c daemon/driver/vm_image.c lib/host/cache.c lib/host/dir.c daemon/store/store.c daemon/store/store_volume.c daemon/store/schema.c \
                           daemon/core/state.c lib/host/hash.c \
                           lib/host/spawn.c lib/host/err.c daemon/base/log.c lib/buf.c
UNIT_LIBS_test_template := -lsqlite3 -ljansson -lcrypto -lpthread

UNIT_test_timer      := daemon/io/timer.c
UNIT_LIBS_test_timer :=

# the transport and the loop it registers with (no thread is started), with a table of its own
UNIT_test_chan       := daemon/io/chan.c daemon/io/loop.c daemon/io/timer.c daemon/base/clock.c \
                        lib/buf.c lib/frame.c
UNIT_LIBS_test_chan  := -lpthread

UNIT_test_cpio       := daemon/driver/cpio.c
UNIT_LIBS_test_cpio  := -larchive

UNIT_test_kmod       := daemon/driver/kmod.c
UNIT_LIBS_test_kmod  :=

UNIT_test_vm_log      := daemon/driver/vm_log.c lib/host/spawn.c
UNIT_LIBS_test_vm_log :=

UNIT_test_jail       := daemon/driver/jail.c
UNIT_LIBS_test_jail  :=

UNIT_test_agent_file      := daemon/driver/agent_file.c lib/host/err.c
UNIT_LIBS_test_agent_file := -lcrypto

UNIT_test_vport      := agent/vport.c
UNIT_LIBS_test_vport :=

UNIT_test_fwcfg      := agent/fwcfg.c
UNIT_LIBS_test_fwcfg :=

UNIT_test_entry      := daemon/core/entry.c lib/frame.c
UNIT_LIBS_test_entry := -ljansson

UNIT_test_user       := lib/user.c
UNIT_LIBS_test_user  :=

UNIT_test_ports      := agent/ports.c
UNIT_LIBS_test_ports :=

UNIT_test_identity      := agent/identity.c
UNIT_LIBS_test_identity :=

# test_api tests the route table (routes.c), which names every handler (api_sandbox.c, api_templates.c, api_ports.c,
# api_exec.c, api_files.c, api_metrics.c); the handlers reach into the lifecycle, the snapshots, the agent
# channel, the store and the template cache, which bring most of the daemon. Only the HTTP
# front end (http.c), the drivers and main.c stay out.
UNIT_test_api := daemon/api/api.c daemon/api/http_status.c daemon/driver/call.c daemon/api/routes.c daemon/api/api_exec.c daemon/api/api_files.c daemon/api/api_ports.c \
                 daemon/api/api_sandbox.c daemon/api/api_templates.c daemon/api/api_volumes.c daemon/core/volume.c daemon/driver/disk.c daemon/api/api_system.c daemon/api/api_metrics.c daemon/core/build.c daemon/core/recipe.c daemon/core/system.c \
                 daemon/core/op.c daemon/core/op_output.c daemon/core/op_frame.c daemon/core/entry.c daemon/core/lifecycle.c daemon/core/sandbox.c daemon/core/sandbox_view.c daemon/core/sandbox_live.c daemon/core/sandbox_create.c \
                 daemon/core/sandbox_net.c daemon/core/sandbox_adopt.c daemon/core/ready.c daemon/core/pool.c \
                 daemon/core/snapshot.c daemon/core/template_rm.c daemon/core/quota.c daemon/core/job.c daemon/core/state.c \
                 daemon/core/metrics.c daemon/core/peer.c daemon/core/proc.c daemon/core/isolation.c daemon/base/clock.c \
                 daemon/io/chan.c daemon/io/loop.c daemon/io/timer.c \
                 daemon/base/crash.c lib/host/err.c daemon/base/log.c lib/host/spawn.c daemon/base/reaper.c \
                 lib/host/hash.c daemon/base/expo.c daemon/core/stats.c daemon/core/starts.c \
                 daemon/store/store.c daemon/store/store_volume.c daemon/store/schema.c daemon/store/template.c daemon/store/template_oci.c daemon/store/template_use.c daemon/driver/vm_image.c lib/host/cache.c daemon/store/cache_prune.c lib/host/dir.c \
                 daemon/net/net.c daemon/net/net_ns.c daemon/net/link.c daemon/net/policy.c lib/buf.c lib/codec.c lib/frame.c
UNIT_LIBS_test_api := -lmicrohttpd -ljansson -lsqlite3 -lcrypto -lnftables -lmnl -lpthread

# test_metrics tests the samples' history (core/metrics.c), whose sampling job reaches the
# drivers' stats through the sandbox layer: it links what test_api links.
UNIT_test_metrics := $(UNIT_test_api)
UNIT_LIBS_test_metrics := $(UNIT_LIBS_test_api)

# test_lifecycle runs pause and resume jobs against a stand-in driver and a store of its own;
# the lifecycle reaches the agent's channel, the store and the sandbox layer: what test_api links.
UNIT_test_lifecycle := $(UNIT_test_api)
UNIT_LIBS_test_lifecycle := $(UNIT_LIBS_test_api)

UNIT_SRC := $(UNIT_TESTS:%=tests/unit/%.c)
UNIT_BIN := $(UNIT_TESTS:%=$(BUILD)/tests/%)

# Each test binary gets UNIT_SECONDS to finish; a hung test fails the run.
UNIT_SECONDS ?= 60

UNIT_test_policy      := daemon/net/policy.c lib/host/err.c
UNIT_LIBS_test_policy := -ljansson

UNIT_test_proxy_host      := daemon/net/proxy_host.c
UNIT_LIBS_test_proxy_host :=

UNIT_test_proxy_http      := daemon/net/proxy_http.c
UNIT_LIBS_test_proxy_http :=

UNIT_test_dns_wire      := daemon/net/dns_wire.c
UNIT_LIBS_test_dns_wire :=

# the Dockerfile subset templates are built from: a pure parser, nothing else
UNIT_test_dockerfile      := lib/host/dockerfile.c lib/host/dockerfile_lex.c \
                             lib/host/dockerfile_words.c lib/host/dockerfile_ref.c \
                             lib/host/dockerfile_canon.c lib/host/err.c \
                             tests/unit/lib/host/dockerfile_check.c
UNIT_LIBS_test_dockerfile :=
# the parser's reading of its text, and its canonical text: the same parser, the same helpers
UNIT_test_dockerfile_words      := $(UNIT_test_dockerfile)
UNIT_LIBS_test_dockerfile_words :=
UNIT_test_dockerfile_canon      := $(UNIT_test_dockerfile)
UNIT_LIBS_test_dockerfile_canon :=
