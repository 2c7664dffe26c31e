# The C library: `make` builds it (cargo, release), `make install` installs polylock.h, the shared
# and static library and a pkg-config file under PREFIX (default /usr/local; DESTDIR is honoured),
# `make uninstall` removes them. PROFILE=debug installs the debug build (the tests do).
#
# The pkg-config file is relocatable when LIBDIR and INCLUDEDIR are the defaults: its prefix is
# ${pcfiledir}/../.., so a tree copied or unpacked anywhere (the C tarball of scripts/package.sh)
# still names its own include/ and lib/. With a LIBDIR or INCLUDEDIR of your own it names them.
#
#   make install PREFIX=$HOME/.local
#   cc app.c $(pkg-config --cflags --libs polylock)

PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PROFILE ?= release
CARGO ?= cargo
TARGET_DIR ?= $(or $(CARGO_TARGET_DIR),target)
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
PROFILE_FLAG := $(if $(filter release,$(PROFILE)),--release,)
OUT := $(TARGET_DIR)/$(if $(filter dev debug,$(PROFILE)),debug,$(PROFILE))
RELOCATABLE := $(and $(filter $(PREFIX)/lib,$(LIBDIR)),$(filter $(PREFIX)/include,$(INCLUDEDIR)))
PC_PREFIX := $(if $(RELOCATABLE),$${pcfiledir}/../..,$(PREFIX))
PC_LIBDIR := $(if $(RELOCATABLE),$${prefix}/lib,$(LIBDIR))
PC_INCLUDEDIR := $(if $(RELOCATABLE),$${prefix}/include,$(INCLUDEDIR))

.PHONY: all build install uninstall

all: build

build:
	$(CARGO) build -p polylock-c $(PROFILE_FLAG) $(if $(filter release dev debug,$(PROFILE)),,--profile $(PROFILE))

install: build
	install -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 644 include/polylock.h $(DESTDIR)$(INCLUDEDIR)/polylock.h
	install -m 644 $(OUT)/libpolylock.a $(DESTDIR)$(LIBDIR)/libpolylock.a
	install -m 755 $(OUT)/libpolylock.so $(DESTDIR)$(LIBDIR)/libpolylock.so
	sed -e 's|@PREFIX@|$(PC_PREFIX)|' -e 's|@LIBDIR@|$(PC_LIBDIR)|' -e 's|@INCLUDEDIR@|$(PC_INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|' bindings-c/polylock.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/polylock.pc

uninstall:
	rm -f $(DESTDIR)$(INCLUDEDIR)/polylock.h $(DESTDIR)$(LIBDIR)/libpolylock.a \
	    $(DESTDIR)$(LIBDIR)/libpolylock.so $(DESTDIR)$(LIBDIR)/pkgconfig/polylock.pc
