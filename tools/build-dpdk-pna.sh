#!/usr/bin/env bash
# Builds the tools the PNA NIC program (mrcgen compile --target pna) runs on, into a prefix
# (default /opt/dpdk-pna):
#   - p4c-dpdk, p4c's DPDK back end, from the p4c the project pins (v1.2.4.8, the one
#     shared/tools/build-p4-tools.sh builds), configured with -DENABLE_DPDK=ON: the P4
#     (PNA) program -> a DPDK SWX pipeline .spec, with bfrt.json, context.json and P4Info;
#   - dpdk-pipeline, DPDK's SWX `pipeline` example app, built from Debian 12's packages
#     (dpdk 22.11, libdpdk-dev; the source from dpdk-doc) with the local fixes below, and
#     the DPDK headers its `pipeline libbuild` command compiles a .spec's C code against
#     (PREFIX/share/dpdk-swx, which env.sh names as RTE_INSTALL_DIR).
# Seen on Debian 12, 2 cores: apt 3 s with the packages already there, app 4 s, swx 6 s
# (apt-get source dpdk), pipelib 40 s, p4c about 20 min on an idle machine and 55 min on
# a busy one, check 1 s. The apt, app, swx, check and env stages into a scratch prefix
# took 13 s, and the app and headers they made were byte-identical to those of the build
# in /opt/dpdk-pna; swx, pipelib, check and env 47 s. Run it as root, in the background
# with a log: it prints one line per stage, and writes PREFIX/env.sh last, so a prefix
# without env.sh is an unfinished build.
#
#   SRC=DIR build-dpdk-pna.sh        # DIR holds git repositories (bare or not) named
#                                    #   owner+name or owner+name/repo, for:
#   p4lang/p4c  p4lang/p4runtime     (without SRC they are cloned from github.com)
#
# Env: PREFIX (default /opt/dpdk-pna), WORK (default /var/tmp/dpdk-pna), JOBS (default nproc;
#      p4c's DPDK back end wants about 2.5 GB per compiler process), STAGES (default
#      "apt app swx pipelib p4c install check env"; any subset, in that order). A prefix
#      built before the pipelib stage existed needs STAGES="swx pipelib env".
# The two local fixes to the pipeline app, applied here with sed to a copy of Debian's
# example source, never committed anywhere:
#   - obj.c asks every ethdev for a 9000-byte MTU; the af_packet PMD (the ports the tests
#     use, on veths) refuses anything above 1518, so the port would not start: it asks
#     for 1500 instead (a RoCEv2 data frame of the tests is far below that);
#   - `pipeline libbuild` compiles the generated C against the DPDK *source* tree
#     ($RTE_INSTALL_DIR/lib/pipeline/rte_swx_pipeline_internal.h and friends), which
#     Debian's binary packages do not ship: the swx stage lays out the headers of
#     `apt-get source dpdk` (same version as the installed libraries) as it expects.
# And one fix to DPDK itself (the pipelib stage): DPDK 22.11's SWX instructions address a
# field by a byte offset held in a uint8_t (struct instr_operand, and the rx/tx port
# field of struct instr_io), so every metadata field past byte 255 silently aliases one
# below it; p4c-dpdk puts every local and temporary of the program in the metadata (the
# NIC program's is 1.6 KB), so its packets computed garbage. The stage rebuilds
# librte_pipeline.so.23 from the same source with those offsets in a uint16_t (the
# structs keep their size and layout otherwise: a uint8_t pad goes), into PREFIX/lib,
# and puts the patched rte_swx_pipeline_internal.h where `pipeline libbuild` reads it;
# dpdk-pipeline must run with LD_LIBRARY_PATH=PREFIX/lib (env.sh sets it).
set -euo pipefail
PREFIX=${PREFIX:-/opt/dpdk-pna}
WORK=${WORK:-/var/tmp/dpdk-pna}
JOBS=${JOBS:-$(nproc)}
STAGES=${STAGES:-apt app swx pipelib p4c install check env}
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
mkdir -p "$WORK"
say() { echo "build-dpdk-pna: $(date +%T) $*"; }
has() { [[ " $STAGES " == *" $1 "* ]]; }
src() {
  local d
  if [ -n "${SRC:-}" ]; then
    for d in "$SRC/$1+$2/repo" "$SRC/$1+$2" "$SRC/$2"; do [ -e "$d" ] && { echo "$d"; return; }; done
    echo "no $1/$2 under SRC=$SRC" >&2; exit 1
  fi
  echo "https://github.com/$1/$2"
}
checkout() {  # OWNER NAME REV DIR
  [ -d "$4/.git" ] || git clone -q -n "$(src "$1" "$2")" "$4"
  git -C "$4" -c advice.detachedHead=false checkout -q -f "$3" 2>/dev/null || true
  [ "$(git -C "$4" rev-parse HEAD)" = "$(git -C "$4" rev-parse "$3^{commit}")" ] \
    || { echo "cannot check out $1/$2 at $3" >&2; exit 1; }
}
# the installed DPDK's version: the source package must be the same one
dpdk_version() { dpkg-query -W -f '${Version}' libdpdk-dev; }

if has apt; then
  say "apt packages (DPDK 22.11 runtime, headers and example source; p4c's build deps)"
  # apt-get source needs deb-src lines; Debian 12's images ship deb lines only
  if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    cat >/etc/apt/sources.list.d/dpdk-pna-src.sources <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dpdk libdpdk-dev dpdk-doc dpkg-dev \
    build-essential pkg-config cmake bison flex libfl-dev libgc-dev libgmp-dev libboost-dev \
    libboost-iostreams-dev libboost-graph-dev libprotobuf-dev libprotoc-dev protobuf-compiler \
    python3 git iproute2 >/dev/null
fi

if has app; then
  say "pipeline app (DPDK $(dpdk_version)'s SWX example, MTU fix)"
  rm -rf "$WORK/pipeline" && cp -r /usr/share/dpdk/examples/pipeline "$WORK/pipeline"
  grep -q '\.mtu = 9000 - (RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN)' "$WORK/pipeline/obj.c" \
    || { echo "obj.c: the 9000-byte MTU line to fix is not there (another DPDK version?)" >&2; exit 1; }
  sed -i 's/\.mtu = 9000 - (RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN), \/\* Jumbo frame MTU \*\//.mtu = 1500, \/* af_packet: at most 1518 *\//' "$WORK/pipeline/obj.c"
  make -s -C "$WORK/pipeline" shared >"$WORK/app.log" 2>&1 || { tail -20 "$WORK/app.log"; exit 1; }
  mkdir -p "$PREFIX/bin" && install -m755 "$WORK/pipeline/build/pipeline-shared" "$PREFIX/bin/dpdk-pipeline"
fi

if has swx; then
  v=$(dpdk_version)
  say "DPDK $v source headers for pipeline libbuild (apt-get source dpdk=$v)"
  rm -rf "$WORK/dpdk-src" && mkdir -p "$WORK/dpdk-src"
  ( cd "$WORK/dpdk-src" && apt-get source -qq "dpdk=$v" ) >"$WORK/swx.log" 2>&1 || { tail -20 "$WORK/swx.log"; exit 1; }
  s=$(find "$WORK/dpdk-src" -mindepth 1 -maxdepth 1 -type d -name 'dpdk*' | head -1)
  [ -f "$s/lib/pipeline/rte_swx_pipeline_internal.h" ] || { echo "no rte_swx_pipeline_internal.h in $s" >&2; exit 1; }
  d=$PREFIX/share/dpdk-swx
  rm -rf "$d" && mkdir -p "$d/config" "$d/build"
  # libbuild's -I list: lib/* (the source tree's headers), config/ (rte_config.h) and
  # build/ (the generated rte_build_config.h and the arch headers: Debian's)
  ( cd "$s" && find lib -name '*.h' -exec install -D -m644 {} "$d/{}" \; )
  cp "$s/config/rte_config.h" "$d/config/"
  cp /usr/include/x86_64-linux-gnu/dpdk/*.h "$d/build/"
fi

if has pipelib; then
  say "librte_pipeline with 16-bit instruction operand offsets (log: $WORK/pipelib.log)"
  s=$(find "$WORK/dpdk-src" -mindepth 1 -maxdepth 1 -type d -name 'dpdk*' | head -1)
  [ -n "$s" ] || { echo "no DPDK source in $WORK/dpdk-src: run the swx stage first" >&2; exit 1; }
  rm -rf "$WORK/pipelib" && cp -r "$s/lib/pipeline" "$WORK/pipelib"
  h=$WORK/pipelib/rte_swx_pipeline_internal.h
  perl -0pi -e 's/(struct instr_operand \{\n\tuint8_t struct_id;\n\tuint8_t n_bits;\n)\tuint8_t offset;\n\tuint8_t pad;\n/$1\tuint16_t offset;\n/' "$h"
  perl -0pi -e 's/(struct instr_io \{\n\tstruct \{\n\t\tunion \{\n\t\t\tstruct \{\n)\t\t\t\tuint8_t offset;\n\t\t\t\tuint8_t n_bits;\n\t\t\t\tuint8_t pad\[2\];/$1\t\t\t\tuint16_t offset;\n\t\t\t\tuint8_t n_bits;\n\t\t\t\tuint8_t pad;/' "$h"
  [ "$(grep -c 'uint16_t offset;' "$h")" -ge 2 ] && ! sed -n '/^struct instr_operand {/,/^};/p' "$h" | grep -q 'uint8_t offset' \
    || { echo "$h: the offset fields to widen are not as expected (another DPDK version?)" >&2; exit 1; }
  gcc -O3 -fPIC -shared -DALLOW_EXPERIMENTAL_API -DALLOW_INTERNAL_API -D_GNU_SOURCE $(pkg-config --cflags libdpdk) \
    -I "$WORK/pipelib" -Wl,-soname,librte_pipeline.so.23 -Wl,--version-script="$WORK/pipelib/version.map" \
    -o "$WORK/pipelib/librte_pipeline.so.23" "$WORK"/pipelib/*.c $(pkg-config --libs libdpdk) >"$WORK/pipelib.log" 2>&1 \
    || { tail -20 "$WORK/pipelib.log"; exit 1; }
  mkdir -p "$PREFIX/lib" && install -m644 "$WORK/pipelib/librte_pipeline.so.23" "$PREFIX/lib/"
  mkdir -p "$PREFIX/share/dpdk-swx/lib/pipeline" && install -m644 "$h" "$PREFIX/share/dpdk-swx/lib/pipeline/"
fi

if has p4c; then
  say "p4c-dpdk (p4c v1.2.4.8, -DENABLE_DPDK=ON; log: $WORK/p4c.log)"
  checkout p4lang p4c v1.2.4.8 "$WORK/p4c"
  checkout p4lang p4runtime 1e771c4e05c4e7e250df00212b3ca02ee3202d71 "$WORK/p4runtime-1e771c4"
  ( cd "$WORK/p4c" && cmake -S . -B build-dpdk -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX" \
      -DP4C_USE_PREINSTALLED_PROTOBUF=ON -DENABLE_PROTOBUF_STATIC=OFF -DENABLE_DPDK=ON \
      -DENABLE_BMV2=OFF -DENABLE_P4TEST=OFF -DENABLE_EBPF=OFF -DENABLE_UBPF=OFF -DENABLE_P4TC=OFF \
      -DENABLE_TEST_TOOLS=OFF -DENABLE_GTESTS=OFF -DENABLE_DOCS=OFF -DENABLE_P4C_GRAPHS=OFF \
      -DFETCHCONTENT_SOURCE_DIR_P4RUNTIME="$WORK/p4runtime-1e771c4" -DFETCHCONTENT_FULLY_DISCONNECTED=ON &&
    cmake --build build-dpdk --target p4c-dpdk -- -j"$JOBS" ) >"$WORK/p4c.log" 2>&1 || { tail -20 "$WORK/p4c.log"; exit 1; }
fi

if has install; then
  say "install p4c-dpdk and its p4include into $PREFIX"
  f=$(find "$WORK/p4c/build-dpdk" -maxdepth 3 -type f -name p4c-dpdk -perm -u+x | head -1)
  [ -n "$f" ] || { echo "p4c built no p4c-dpdk" >&2; exit 1; }
  mkdir -p "$PREFIX/bin" && install -m755 "$f" "$PREFIX/bin/"
  # p4c-dpdk finds core.p4 and pna.p4 in ../share/p4c/p4include beside its binary
  mkdir -p "$PREFIX/share/p4c" && rm -rf "$PREFIX/share/p4c/p4include" &&
    cp -r "$WORK/p4c/p4include" "$PREFIX/share/p4c/p4include"
fi

if has check; then
  say "check: a one-table PNA program through p4c-dpdk"
  t=$(mktemp -d)
  cat >"$t/p.p4" <<'EOF'
#include <core.p4>
#include <pna.p4>
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
struct h_t { eth_t eth; }
struct m_t { bit<16> t; }
parser P(packet_in pkt, out h_t h, inout m_t m, in pna_main_parser_input_metadata_t istd) {
  state start { pkt.extract(h.eth); transition accept; } }
control Pre(in h_t h, inout m_t m, in pna_pre_input_metadata_t istd, inout pna_pre_output_metadata_t ostd) { apply { } }
control C(inout h_t h, inout m_t m, in pna_main_input_metadata_t istd, inout pna_main_output_metadata_t ostd) {
  action fwd() { send_to_port((PortId_t)1); }
  action drop() { drop_packet(); }
  table by_type { key = { h.eth.t : exact; } actions = { fwd; drop; } default_action = drop(); size = 16; }
  apply { by_type.apply(); } }
control D(packet_out pkt, in h_t h, in m_t m, in pna_main_output_metadata_t ostd) { apply { pkt.emit(h.eth); } }
PNA_NIC(P(), Pre(), C(), D()) main;
EOF
  "$PREFIX/bin/p4c-dpdk" --arch pna -o "$t/p.spec" "$t/p.p4" >"$t/log" 2>&1 || { cat "$t/log"; exit 1; }
  grep -q '^table by_type' "$t/p.spec" || { echo "p4c-dpdk wrote no table by_type" >&2; exit 1; }
  "$PREFIX/bin/dpdk-pipeline" -h 2>&1 | grep -q 'Usage\|-s' || true
  LD_LIBRARY_PATH="$PREFIX/lib" ldd "$PREFIX/bin/dpdk-pipeline" | grep -q 'not found' && { ldd "$PREFIX/bin/dpdk-pipeline"; exit 1; }
  LD_LIBRARY_PATH="$PREFIX/lib" ldd "$PREFIX/bin/dpdk-pipeline" | grep -q "$PREFIX/lib/librte_pipeline.so.23" \
    || { echo "dpdk-pipeline does not load $PREFIX/lib/librte_pipeline.so.23 (the pipelib stage)" >&2; exit 1; }
  [ -f "$PREFIX/share/dpdk-swx/lib/pipeline/rte_swx_pipeline_internal.h" ] || { echo "no swx headers" >&2; exit 1; }
  rm -rf "$t"
fi

if has env; then
  cat >"$PREFIX/env.sh" <<EOF
export PATH="$PREFIX/bin:\$PATH"
export RTE_INSTALL_DIR="$PREFIX/share/dpdk-swx"   # for dpdk-pipeline's "pipeline libbuild"
export LD_LIBRARY_PATH="$PREFIX/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"   # its librte_pipeline (pipelib)
EOF
  say "done: $(ls "$PREFIX/bin" | tr '\n' ' ')(source $PREFIX/env.sh)"
fi
