# dist/dist.mk - installing space as a system's (included by the Makefile).
#
#   make install   the programs, their recipes, the web console's files, the unit, the configuration file, the man pages
#                  and the bash completion into $(DESTDIR), laid out as the Debian package has
#                  them (PREFIX=/usr there; /usr/local by default)
#   make deb       the Debian packages space and python3-space (debian/), into build/deb/
#   make deb-test  builds them if need be, then checks them (tests/deb/test_deb.py)
#
# spaced finds the agent beside itself, and the shim, space-build, space-e2b and the recipes
# beside the agent (daemon/main.c): all of them live in $(PREFIX)/lib/space, and
# $(PREFIX)/sbin/spaced is a link to the one there.

SPACE_LIBDIR  := $(PREFIX)/lib/space
SYSCONFDIR    ?= /etc
UNITDIR       ?= /lib/systemd/system
MANDIR        := $(PREFIX)/share/man
MAN_PAGES     := $(BUILD)/man/spaced.8 $(BUILD)/man/space.1

.PHONY: install man deb deb-test

# Man pages from the programs' own --help (help2man); the version is the Makefile's, since
# `space --version` also asks spaced for its own.
$(BUILD)/man/spaced.8: $(BUILD)/spaced
	@mkdir -p $(dir $@)
	@echo "  MAN     $@"
	@help2man --no-info --section=8 --version-string=$(VERSION) \
		--name="the space daemon: sandboxes under gVisor or in microVMs, over an HTTP API" \
		--include=dist/man/spaced.h2m --output=$@ $<

$(BUILD)/man/space.1: $(BUILD)/space
	@mkdir -p $(dir $@)
	@echo "  MAN     $@"
	@help2man --no-info --section=1 --version-string=$(VERSION) \
		--name="run code in sandboxes of spaced" --include=dist/man/space.h2m --output=$@ $<

man: $(MAN_PAGES)

install: programs man
	install -d $(DESTDIR)$(SPACE_LIBDIR) $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/sbin
	install -m 0755 $(BUILD)/spaced $(BUILD)/space-agent $(BUILD)/space-build $(BUILD)/space-e2b \
		$(DESTDIR)$(SPACE_LIBDIR)/
	install -m 0644 $(BUILD)/libspace-shim.so $(DESTDIR)$(SPACE_LIBDIR)/
	ln -sfn ../lib/space/spaced $(DESTDIR)$(PREFIX)/sbin/spaced
	install -m 0755 $(BUILD)/space $(DESTDIR)$(PREFIX)/bin/
	for r in $(BUILD)/recipes/*/; do \
		install -d $(DESTDIR)$(SPACE_LIBDIR)/recipes/$$(basename $$r) && \
		install -m 0644 $$r* $(DESTDIR)$(SPACE_LIBDIR)/recipes/$$(basename $$r)/ || exit 1; \
	done
	install -d $(DESTDIR)$(SPACE_LIBDIR)/ui
	install -m 0644 $(BUILD)/ui/* $(DESTDIR)$(SPACE_LIBDIR)/ui/
	install -D -m 0644 dist/spaced.conf $(DESTDIR)$(SYSCONFDIR)/space/spaced.conf
	install -D -m 0644 dist/systemd/spaced.service $(DESTDIR)$(UNITDIR)/spaced.service
	install -D -m 0644 dist/bash-completion/space $(DESTDIR)$(PREFIX)/share/bash-completion/completions/space
	install -D -m 0644 $(BUILD)/man/spaced.8 $(DESTDIR)$(MANDIR)/man8/spaced.8
	install -D -m 0644 $(BUILD)/man/space.1 $(DESTDIR)$(MANDIR)/man1/space.1

# dpkg-buildpackage writes beside the source tree: it runs on a copy of this one in
# build/deb/src, so the packages land in build/deb/ and the tree's build/ is not reused. Its
# PATH is Debian's alone (a python3 of one's own first in PATH would lack pybuild's modules).
DEB_DIR := $(BUILD)/deb
DEB_PATH := /usr/sbin:/usr/bin:/sbin:/bin
deb:
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src/space-$(VERSION)
	tar -c --exclude=./build --exclude=./build-asan --exclude=./.git --exclude=./.pybuild . | \
		tar -x -C $(DEB_DIR)/src/space-$(VERSION)
	cd $(DEB_DIR)/src/space-$(VERSION) && PATH=$(DEB_PATH) dpkg-buildpackage -b -us -uc
	mv $(DEB_DIR)/src/*.deb $(DEB_DIR)/src/*.changes $(DEB_DIR)/src/*.buildinfo $(DEB_DIR)/
	rm -rf $(DEB_DIR)/src

deb-test:
	$(PYTEST) tests/deb
