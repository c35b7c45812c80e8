#!/usr/bin/env bash
# leanrt inside the reference runtime (hw-native-sys/simpler), on its a2a3sim
# simulator: builds the host_build_graph runtime stock and with leanrt, runs
# bgemm, benchmark_bgemm Case0 and paged_attention (float16 cases) with their
# golden checks, and prints the reference's own bind timers side by side.
#
#   VENV=<venv> integrations/simpler/run.sh [options] <simpler-checkout> <pto-isa-checkout>
#
#   --rounds N     binds per process (default 6; the first is dropped as cold)
#   --procs N      processes per variant and workload (default 2)
#   --only LIST    comma-separated subset of bgemm,benchmark_bgemm,pa17,pa1032
#   --stock-only   build and run the stock runtime only (any commit)
#   --no-build     reuse the runtimes the last invocation built (reruns)
#   --no-fixes     build the checkout as it is: without patches/fixes/<commit>.patch,
#                  the reference's own bugs that the script otherwise fixes in both
#                  builds, stock and leanrt alike (see the README)
#   --leanrt-libs DIRS
#                  comma-separated directories, each holding a libleanrt.so.0
#                  (e.g. another commit's target/release): each is one more
#                  variant (lib1, lib2, ...), the leanrt runtime loading that
#                  library, alternating with stock and leanrt process by
#                  process (an A/B of leanrt builds in one run)
#   --skip-without-checkout
#                  with no checkout arguments, read SIMPLER_CHECKOUT and
#                  PTO_ISA_CHECKOUT; when they are unset, say "skipped" and
#                  exit 77 (what CI asks for) instead of failing
#
# VENV names a Python venv holding the reference's test packages (torch,
# pytest, nanobind, scikit-build-core, cmake, PyYAML, cloudpickle, numpy);
# given one, the script fetches nothing: the two checkouts are given and
# pto-isa is cloned locally from the given one at the commit in the
# reference's pto_isa.pin. Without VENV it creates <simpler>/build/leanrt-venv
# and pip-installs those packages there (about 5.5 GB with torch's CUDA
# wheels). Work files go to <simpler>/build/leanrt-sim. The checkout's
# sources are patched for the leanrt build and restored on exit; build/lib
# is left holding the stock runtime. Exit status 0 only when every golden
# passed in every run.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
LEANRT_ROOT=$(cd "$HERE/../.." && pwd)
ROUNDS=6 PROCS=2 ONLY=bgemm,benchmark_bgemm,pa17,pa1032 STOCK_ONLY=0 SKIP_MISSING=0 NO_BUILD=0 FIXES=1
LIBS=
args=()
while (($#)); do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2;;
    --procs) PROCS=$2; shift 2;;
    --only) ONLY=$2; shift 2;;
    --stock-only) STOCK_ONLY=1; shift;;
    --no-build) NO_BUILD=1; shift;;
    --no-fixes) FIXES=0; shift;;
    --leanrt-libs) LIBS=$2; shift 2;;
    --skip-without-checkout) SKIP_MISSING=1; shift;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0;;
    *) args+=("$1"); shift;;
  esac
done
if ((${#args[@]} == 0)) && ((SKIP_MISSING)); then
  if [ -z "${SIMPLER_CHECKOUT:-}" ] || [ -z "${PTO_ISA_CHECKOUT:-}" ]; then
    echo "integrations/simpler/run.sh: skipped: needs a reference checkout" \
         "(set SIMPLER_CHECKOUT and PTO_ISA_CHECKOUT)"
    exit 77
  fi
  args=("$SIMPLER_CHECKOUT" "$PTO_ISA_CHECKOUT")
fi
if ((${#args[@]} != 2)); then
  echo "usage: VENV=<venv> $0 [options] <simpler-checkout> <pto-isa-checkout>  (--help)" >&2
  exit 2
fi
REF=$(cd "${args[0]}" && pwd)
PTO=$(cd "${args[1]}" && pwd)
((ROUNDS >= 2)) || { echo "--rounds must be at least 2 (the first is dropped)" >&2; exit 2; }
WORK=$REF/build/leanrt-sim
VENV=${VENV:-$REF/build/leanrt-venv}
mkdir -p "$WORK/logs"
say() { printf '\n== %s\n' "$*"; }

# ---- which commit, which patch ---------------------------------------------
HEAD=$(git -C "$REF" rev-parse HEAD)
patch_for() {  # <dir>: the <commit>.patch in it whose name starts HEAD's hash, if any
  local p
  for p in "$1"/*.patch; do
    [ -e "$p" ] || continue
    case "$HEAD" in "$(basename "$p" .patch)"*) echo "$p";; esac
  done
}
PATCH=$(patch_for "$HERE/patches")
if [ -z "$PATCH" ] && ((!STOCK_ONLY)); then
  echo "no leanrt patch for $HEAD (patches/: $(cd "$HERE/patches" && echo *.patch)); running stock only"
  STOCK_ONLY=1
fi
# The reference's own bugs at this commit, fixed in both builds (README).
FIX=
((!FIXES)) || FIX=$(patch_for "$HERE/patches/fixes")
if [ -n "$(git -C "$REF" status --porcelain --untracked-files=no)" ]; then
  echo "$REF has local changes; give a clean checkout" >&2
  exit 1
fi
say "reference $HEAD${PATCH:+, patch $(basename "$PATCH")}${FIX:+, in both builds fixes/$(basename "$FIX")}"

# ---- pto-isa at the pinned commit, from the given checkout -----------------
PIN=$(tr -d '[:space:]' < "$REF/pto_isa.pin")
ISA=$REF/build/pto-isa
if [ ! -d "$ISA/.git" ]; then
  git -C "$PTO" cat-file -e "$PIN^{commit}" 2>/dev/null ||
    { echo "pto-isa checkout $PTO lacks the pinned commit $PIN" >&2; exit 1; }
  git clone -q --no-checkout "$PTO" "$ISA"
  git -C "$ISA" checkout -q "$PIN"
fi
[ "$(git -C "$ISA" rev-parse HEAD)" = "$PIN" ] ||
  { echo "$ISA is not at the pin $PIN" >&2; exit 1; }

# ---- Python packages ----------------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
  say "venv $VENV (torch and its CUDA wheels: about 5.5 GB)"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q scikit-build-core nanobind cmake pytest pytest-timeout pytest-xdist \
    PyYAML cloudpickle numpy torch
fi
# shellcheck disable=SC1091
. "$VENV/bin/activate"

# ---- g++-15 ---------------------------------------------------------------------
# The reference compiles simulated kernels with a fixed `g++-15 -std=c++23`.
# Without one, a stand-in over the newest g++ found (12 on Debian 12) is put
# first on PATH. GCC 12 rejects `static_assert(false, ...)` in an uninstantiated
# template (accepted from GCC 13); a pto-isa with that line in
# include/pto/cpu/TReduceIdx.hpp is compiled from an overlay copy of include/
# where the condition depends on the template parameter (the checkout is left
# clean, which the reference checks).
if ! command -v g++-15 >/dev/null; then
  GXX=
  for v in 14 13 12; do command -v "g++-$v" >/dev/null && { GXX=$(command -v "g++-$v"); GCC=$(command -v "gcc-$v"); break; }; done
  [ -n "$GXX" ] || { echo "needs g++ 12 or newer" >&2; exit 1; }
  mkdir -p "$WORK/bin"
  ln -sf "$GCC" "$WORK/bin/gcc-15"
  cat > "$WORK/bin/g++-15" <<EOF
#!/usr/bin/env bash
overlay=$WORK/pto-isa-overlay
out=()
for a in "\$@"; do
  case "\$a" in
    -I*pto-isa/include|-I*pto-isa/include/pto)
      inc=\${a#-I}; root=\${inc%/include*}
      if grep -q 'static_assert(false' "\$root/include/pto/cpu/TReduceIdx.hpp" 2>/dev/null; then
        dir=\$overlay/\$(realpath "\$root" | md5sum | cut -c1-8)
        (
          flock 9
          if [ ! -d "\$dir/include" ]; then
            rm -rf "\$dir.tmp" && mkdir -p "\$dir.tmp" && cp -r "\$root/include" "\$dir.tmp/" &&
              sed -i 's/static_assert(false,/static_assert(sizeof(DType) == 0,/' "\$dir.tmp/include/pto/cpu/TReduceIdx.hpp" &&
              mv "\$dir.tmp" "\$dir"
          fi
        ) 9>"\$overlay.lock"
        a=-I\$dir/include\${inc#"\$root"/include}
      fi;;
  esac
  out+=("\$a")
done
exec $GXX "\${out[@]}"
EOF
  chmod +x "$WORK/bin/g++-15"
  mkdir -p "$WORK/pto-isa-overlay"
  export PATH=$WORK/bin:$PATH
  echo "g++-15: a stand-in over $GXX"
fi
export PYTHONPATH=$REF:$REF/python

# ---- builds -----------------------------------------------------------------------
LIBDIR=$REF/build/lib/a2a3/sim/host_build_graph
build_runtime() {  # the a2a3sim host_build_graph runtime only (and the sim context)
  (cd "$REF" && python - <<'PY'
import os, sys
sys.path[:0] = [os.getcwd(), os.getcwd() + "/python"]
from simpler_setup.runtime_builder import RuntimeBuilder
b = RuntimeBuilder(platform="a2a3sim")
if hasattr(b, "ensure_sim_context"):
    b.ensure_sim_context(build=True)
b.get_binaries("host_build_graph", build=True)
PY
  )
}
restore() {
  if [ -n "${PATCHED:-}" ]; then git -C "$REF" apply -R "$PATCH" && PATCHED=; fi
  if [ -n "${FIXED:-}" ]; then git -C "$REF" apply -R "$FIX" && FIXED=; fi
  [ -f "$WORK/stock/libhost_runtime.so" ] && cp "$WORK/stock/libhost_runtime.so" "$LIBDIR/" || true
}
trap restore EXIT

RUNTIMES=(stock)  # the reference's runtimes this invocation builds (or reuses)
((STOCK_ONLY)) || RUNTIMES+=(leanrt)
VARIANTS=("${RUNTIMES[@]}")
declare -A LIBDIRS  # variant -> the directory its libleanrt.so.0 is loaded from
if [ -n "$LIBS" ]; then
  ((!STOCK_ONLY)) || { echo "--leanrt-libs needs the leanrt runtime (not --stock-only)" >&2; exit 2; }
  IFS=, read -r -a dirs <<< "$LIBS"
  for i in "${!dirs[@]}"; do
    d=$(cd "${dirs[$i]}" 2>/dev/null && pwd) && [ -f "$d/libleanrt.so.0" ] ||
      { echo "--leanrt-libs: ${dirs[$i]} holds no libleanrt.so.0" >&2; exit 2; }
    VARIANTS+=("lib$((i + 1))"); LIBDIRS[lib$((i + 1))]=$d
    echo "lib$((i + 1)): the leanrt runtime with $d/libleanrt.so.0"
  done
fi
if ((NO_BUILD)); then
  for v in "${RUNTIMES[@]}"; do
    [ -f "$WORK/$v/libhost_runtime.so" ] || { echo "--no-build: no $v runtime from an earlier run" >&2; exit 1; }
  done
  echo "reusing the runtimes in $WORK/{${RUNTIMES[*]// /,}} ($(cat "$WORK/fixes.txt" 2>/dev/null || echo "fixes unknown"))"
else
  say "build: the reference's task interface, then its stock a2a3sim host_build_graph runtime"
  if [ -n "$FIX" ]; then
    git -C "$REF" apply "$FIX"
    FIXED=1
    echo "built with fixes/$(basename "$FIX")" > "$WORK/fixes.txt"
  else
    echo "built without fixes" > "$WORK/fixes.txt"
  fi
  cmake -S "$REF" -B "$REF/build/cmake_only" -DCMAKE_BUILD_TYPE=Release \
    -Dnanobind_DIR="$(python -c 'import nanobind; print(nanobind.cmake_dir())')" > "$WORK/logs/cmake.log"
  cmake --build "$REF/build/cmake_only" --target _task_interface -j "$(nproc)" >> "$WORK/logs/cmake.log"
  (unset LEANRT_ROOT LEANRT_LIBRARY; build_runtime) > "$WORK/logs/build-stock.log" 2>&1 ||
    { tail -30 "$WORK/logs/build-stock.log"; exit 1; }
  mkdir -p "$WORK/stock" "$WORK/leanrt"
  cp "$LIBDIR/libhost_runtime.so" "$WORK/stock/"
  if ((!STOCK_ONLY)); then
    say "build: leanrt, then the runtime with $(basename "$PATCH")"
    (cd "$LEANRT_ROOT" && cargo build --release -p leanrt) > "$WORK/logs/build-leanrt.log" 2>&1 ||
      { tail -30 "$WORK/logs/build-leanrt.log"; exit 1; }
    git -C "$REF" apply "$PATCH"
    PATCHED=1
    (export LEANRT_ROOT LEANRT_LIBRARY=$LEANRT_ROOT/target/release/libleanrt.so; build_runtime) \
      > "$WORK/logs/build-with-leanrt.log" 2>&1 || { tail -30 "$WORK/logs/build-with-leanrt.log"; exit 1; }
    cp "$LIBDIR/libhost_runtime.so" "$WORK/leanrt/"
    git -C "$REF" apply -R "$PATCH"
    PATCHED=
    [[ $(nm -D "$WORK/leanrt/libhost_runtime.so") == *" U lrt_runtime_maker_"*upload* ]] ||
      { echo "the leanrt build does not call leanrt" >&2; exit 1; }
  fi
  if [ -n "${FIXED:-}" ]; then git -C "$REF" apply -R "$FIX"; FIXED=; fi
fi

# ---- workloads ----------------------------------------------------------------------
# The hbg tests live under tests/st at #1659 and before, under examples/ or
# tests/st at main. benchmark_bgemm's hbg test exists only in later commits
# and uses the kernels of the tensormap_and_ringbuffer example beside it: at a
# commit without it, the test is taken from the checkout's own git history
# (BENCH_FROM, default the newest commit that has it; TensorArg read as Tensor
# where the checkout's simpler_setup predates it) and run against this
# checkout's tensormap_and_ringbuffer kernels.
find_test() {  # <relative dir under a2a3/host_build_graph> <file>
  for d in tests/st examples; do
    [ -f "$REF/$d/a2a3/host_build_graph/$1/$2" ] && { echo "$REF/$d/a2a3/host_build_graph/$1/$2"; return; }
  done
  return 1
}
BGEMM=$(find_test bgemm test_bgemm.py)
BENCH=$(find_test benchmark_bgemm test_benchmark_bgemm.py || true)
TMR_KERNELS=$REF/examples/a2a3/tensormap_and_ringbuffer/benchmark_bgemm/kernels
if [ -z "$BENCH" ] && [ -d "$TMR_KERNELS" ]; then
  src=${BENCH_FROM:-$(git -C "$REF" log --all -1 --format=%H -- examples/a2a3/host_build_graph/benchmark_bgemm || true)}
  if [ -n "$src" ]; then
    rm -rf "$WORK/examples" && mkdir -p "$WORK/examples/host_build_graph/benchmark_bgemm"
    ln -s "$REF/examples/a2a3/tensormap_and_ringbuffer" "$WORK/examples/tensormap_and_ringbuffer"
    BENCH=$WORK/examples/host_build_graph/benchmark_bgemm/test_benchmark_bgemm.py
    git -C "$REF" show "$src:examples/a2a3/host_build_graph/benchmark_bgemm/test_benchmark_bgemm.py" > "$BENCH"
    grep -q 'TensorArg' "$REF/simpler_setup/__init__.py" || sed -i 's/\bTensorArg\b/Tensor/g' "$BENCH"
    echo "benchmark_bgemm: the test from ${src:0:9} in the checkout's history, with this checkout's kernels"
  fi
fi
# paged_attention with float16 cases. GCC before 14 has no real bf16: pto-isa
# falls back to _Float16 there, so the stock bfloat16 cases fail their golden
# (max_diff about 2) at every commit, leanrt or not. The copy below is
# generated from the reference's own test: its CASES become small2's
# parameters in float16 (batch 1, context 64: 17 tasks) and the same with
# batch 8, context 512, max_model_len 1024 (1032 tasks).
PA_SRC=$(find_test paged_attention test_paged_attention.py)
PA=$WORK/paged_attention/test_paged_attention_fp16.py
mkdir -p "$WORK/paged_attention"
ln -sfn "$(dirname "$PA_SRC")/kernels" "$WORK/paged_attention/kernels"
python - "$PA_SRC" "$PA" <<'PY'
import ast, copy, pprint, sys
src, dst = sys.argv[1], sys.argv[2]
text = open(src).read()
node = next(n for n in ast.walk(ast.parse(text))
            if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "CASES")
cases = ast.literal_eval(node.value)
small2 = next(c for c in cases if c["name"] == "small2")
p17 = dict(copy.deepcopy(small2["params"]), dtype="float16")
p1032 = dict(p17, batch=8, context_len=512, max_model_len=1024)
new = [{"name": "fp16_17", "platforms": ["a2a3sim"], "params": p17},
       {"name": "fp16_1032", "platforms": ["a2a3sim"], "params": p1032}]
lines = text.splitlines(keepends=True)
indent = " " * node.col_offset
body = pprint.pformat(new, indent=1, width=100).replace("\n", "\n" + indent)
out = "".join(lines[:node.lineno - 1]) + indent + "CASES = " + body + "\n" + "".join(lines[node.end_lineno:])
out = out.replace("paged attention", "paged attention (float16 cases generated from the reference's test)", 1)
open(dst, "w").write(out)
PY

declare -A TEST CASE EXTRA
TEST[bgemm]=$BGEMM; CASE[bgemm]=; EXTRA[bgemm]=
TEST[benchmark_bgemm]=$BENCH; CASE[benchmark_bgemm]=Case0; EXTRA[benchmark_bgemm]="--manual include"
TEST[pa17]=$PA; CASE[pa17]=fp16_17; EXTRA[pa17]=
TEST[pa1032]=$PA; CASE[pa1032]=fp16_1032; EXTRA[pa1032]=

# ---- runs ------------------------------------------------------------------------------
# Each process runs --rounds binds; stock and leanrt alternate, process by
# process, so both see the same machine load. The reference's bind-phase
# breakdown (main) is switched on; older commits ignore the variable.
export SIMPLER_HBG_BIND_BREAKDOWN_ENABLE=1
STAMP_LEANRT=$(git -C "$LEANRT_ROOT" describe --always --dirty 2>/dev/null || echo unknown)
FAIL=0
IFS=, read -r -a WANT <<< "$ONLY"
for w in "${WANT[@]}"; do
  [[ -v "TEST[$w]" ]] || { echo "unknown workload $w" >&2; exit 2; }
  if [ -z "${TEST[$w]}" ] || [ ! -f "${TEST[$w]}" ]; then
    echo "$w: not in this checkout or its history: not run"; continue
  fi
  rm -f "$WORK/logs/$w".*.log
  for ((p = 1; p <= PROCS; p++)); do
    for v in "${VARIANTS[@]}"; do
      runtime=$v lib=
      [[ -v "LIBDIRS[$v]" ]] && runtime=leanrt lib=${LIBDIRS[$v]}
      cp "$WORK/$runtime/libhost_runtime.so" "$LIBDIR/"
      log=$WORK/logs/$w.$v.$p.log
      # The log's first line says what made it (the reference's phase tool
      # echoes it above its table).
      cmd="python ${TEST[$w]} -p a2a3sim --rounds $ROUNDS --log-level info${CASE[$w]:+ --case ${CASE[$w]}}${EXTRA[$w]:+ ${EXTRA[$w]}}"
      printf '[stamp] %s; simpler %s, %s runtime%s\n' "$cmd" "${HEAD:0:9}" "$v" \
        "$([ "$v" = leanrt ] && echo ", leanrt $STAMP_LEANRT")${lib:+, leanrt from $lib}" > "$log"
      # shellcheck disable=SC2086
      if (cd "$(dirname "${TEST[$w]}")" && ${lib:+env LD_LIBRARY_PATH="$lib"} python "${TEST[$w]}" -p a2a3sim --rounds "$ROUNDS" \
            --log-level info ${CASE[$w]:+--case ${CASE[$w]}} ${EXTRA[$w]}) >> "$log" 2>&1 &&
         grep -q ' PASSED' "$log" && ! grep -q ' FAILED' "$log"; then
        echo "$w $v process $p: golden passed ($ROUNDS rounds)"
      else
        echo "$w $v process $p: FAILED (log $log)"; FAIL=1
      fi
    done
  done
done

# ---- the reference's own bind figures, side by side ----------------------------------------
say "bind, median of warm rounds (ms; the first round of each process dropped; the reference's timers)"
python - "$WORK/logs" "$ROUNDS" "$ONLY" "${VARIANTS[@]}" <<'PY'
import glob, re, statistics, subprocess, sys
logs, rounds, only, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4:]
# The bind span, at any commit: main names it chip.run.bind, #1659 and
# before simpler_run.bind; its dur is in ns (the TIMING lines are whole ms).
SPAN = re.compile(r"\[STRACE\].* name=(?:simpler_run|chip\.run)\.bind ts=\d+ dur=(\d+)")
TIMING = re.compile(r"TIMING: (\w+) = (\d+)ms")
PHASE = re.compile(r"bind phase=(\w+) start_ns=(\d+) dur_ns=(\d+)")

def warm(log):
    """Per warm round: the bind span (ms), TIMING lines (ms), bind phases (ms)."""
    text = open(log, errors="replace").read()
    rounds_ = []
    cur_t, cur_p = {}, {}
    for line in text.splitlines():
        m = TIMING.search(line)
        if m:
            cur_t[m[1]] = int(m[2])
        m = PHASE.search(line)
        if m:
            cur_p[m[1]] = cur_p.get(m[1], 0) + int(m[3]) / 1e6
            # The shared-memory part: from shared_mem's start to arena_h2d's
            # end, contiguous inside run_host_orchestration (the arena's
            # growth, the untimed framing and compaction, the copy).
            if m[1] == "shared_mem":
                cur_p["_sm_start"] = int(m[2])
            if m[1] == "arena_h2d" and "_sm_start" in cur_p:
                cur_p["sm_part"] = (int(m[2]) + int(m[3]) - cur_p.pop("_sm_start")) / 1e6
        m = SPAN.search(line)
        if m:
            rounds_.append((int(m[1]) / 1e6, cur_t, cur_p))
            cur_t, cur_p = {}, {}
    return rounds_[1:]

def med(xs):
    return statistics.median(xs) if xs else float("nan")

names = {"bgemm": "bgemm", "benchmark_bgemm": "benchmark_bgemm Case0",
         "pa17": "paged_attention fp16_17", "pa1032": "paged_attention fp16_1032"}
rows = []
for w in only:
    per = {}
    for v in variants:
        rs = [r for f in sorted(glob.glob(f"{logs}/{w}.{v}.*.log")) for r in warm(f)]
        if rs:
            per[v] = rs
    if not per:
        continue
    print(f"\n{names.get(w, w)}")
    keys_t = sorted({k for rs in per.values() for r in rs for k in r[1]})
    keys_p = sorted({k for rs in per.values() for r in rs for k in r[2]
                     if not k.startswith("_") and k != "sm_part"})
    print(f"  {'':28}" + "".join(f"{v:>12}" for v in per))
    line = lambda label, f: print(f"  {label:28}" + "".join(f"{f(rs):12.3f}" for rs in per.values()))
    line("bind ([STRACE] span)", lambda rs: med([r[0] for r in rs]))
    for k in keys_t:
        line("TIMING " + k + " (whole ms)", lambda rs, k=k: med([r[1][k] for r in rs if k in r[1]]))
    for k in keys_p:
        line("phase " + k, lambda rs, k=k: med([r[2][k] for r in rs if k in r[2]]))
    if keys_p:
        line("phases shared_mem + arena_h2d",
             lambda rs: med([r[2].get("shared_mem", 0) + r[2].get("arena_h2d", 0) for r in rs]))
        line("run.sh: shared-memory part",
             lambda rs: med([r[2]["sm_part"] for r in rs if "sm_part" in r[2]]))
    print("  warm rounds: " + ", ".join(f"{v} {len(rs)}" for v, rs in per.items()))
    rows.append((names.get(w, w), {v: med([r[0] for r in rs]) for v, rs in per.items()},
                 {v: med([r[2]["sm_part"] for r in rs if "sm_part" in r[2]]) for v, rs in per.items()}))
if len(variants) > 1 and rows:
    nan = float("nan")
    for title, k, unit, scale in (
            ("bind (the reference's [STRACE] bind span)", 1, "ms", 1),
            ("shared-memory part (run.sh's span from the shared_mem phase's start to the "
             "arena_h2d phase's end:\n  not one of the reference's phases; it also covers the "
             "stock path's untimed framing and compaction)", 2, "us", 1000)):
        if all(all(x != x for x in r[k].values()) for r in rows):
            continue  # a commit without the bind phases
        print(f"\nsummary: {title}, median {unit}")
        others = [v for v in variants if v != "stock"]
        print(f"  {'workload':28}" + "".join(f"{v:>12}" for v in variants)
              + "".join(f"{v + '/stock':>14}" for v in others))
        for r in rows:
            m = r[k]
            print(f"  {r[0]:28}" + "".join(f"{m.get(v, nan) * scale:12.3f}" for v in variants)
                  + "".join(f"{m.get(v, nan) / m.get('stock', nan):14.3f}" for v in others))
PY
# main's own per-phase summary, where the reference has the tool
if python -c 'import simpler_setup.tools.hbg_bind_phases' 2>/dev/null; then
  say "the reference's hbg_bind_phases summary, per log"
  for w in "${WANT[@]}"; do for f in "$WORK/logs/$w".*.[0-9]*.log; do
    [ -e "$f" ] || continue
    echo "-- $(basename "$f")"
    python -m simpler_setup.tools.hbg_bind_phases "$f" --rounds "$ROUNDS" || true
  done; done
fi
((FAIL == 0)) && echo "every golden passed" || { echo "some runs FAILED"; exit 1; }
