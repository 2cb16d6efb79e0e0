# Shared set-up for bin/icecheck, bin/test and bin/benchmark: a virtualenv at $ICECHECK_VENV
# (default .venv) holding an editable install of THIS tree.
#
# The venv may be shared between clones (ICECHECK_VENV=/somewhere/shared). An editable install
# points at one tree, so the stamp $ICECHECK_VENV/.icecheck-stamp records which tree was
# installed, the SHA-256 of its pyproject.toml and the extras installed with it:
#   tree=/path/of/the/tree  pyproject=<sha256>  extras=,conformance,browser,
# Nothing is reinstalled while the tree and pyproject.toml's content are the same (a fresh
# checkout's newer mtime alone does not count); an install from another tree, a changed
# pyproject.toml, or extras not yet installed cause one reinstall.
icecheck_pyproject_hash() {
  python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"
}

# icecheck_step WHAT LOG CMD...: run CMD with its output appended to LOG, saying WHAT on one
# line; on failure, the log's last lines and exit 1.
icecheck_step() {
  local what="$1" log="$2"
  shift 2
  echo "icecheck: $what..." >&2
  if ! "$@" >>"$log" 2>&1; then
    echo "icecheck: $what failed; the last lines of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}

icecheck_bootstrap() {
  local extras="$1"
  ICECHECK_VENV="${ICECHECK_VENV:-$root/.venv}"
  export ICECHECK_VENV
  command -v python3 >/dev/null || { echo "icecheck: python3 (3.11 or later) is required" >&2; exit 2; }
  local stamp="$ICECHECK_VENV/.icecheck-stamp"
  local hash want have="" tree="" sha="" done_extras=","
  hash="$(icecheck_pyproject_hash "$root/pyproject.toml")"
  if [ -f "$stamp" ]; then
    tree="$(sed -n 's/^tree=//p' "$stamp")"
    sha="$(sed -n 's/^pyproject=//p' "$stamp")"
    done_extras="$(sed -n 's/^extras=//p' "$stamp")"
  fi
  if [ "$tree" = "$root" ] && [ "$sha" = "$hash" ]; then
    have="$done_extras"
  else
    have=","
  fi
  local missing="" e
  IFS=',' read -ra want <<<"$extras"
  for e in "${want[@]}"; do
    [ -n "$e" ] && [[ "$have" != *",$e,"* ]] && missing=1
  done
  if [ -x "$ICECHECK_VENV/bin/icecheck" ] && [ "$tree" = "$root" ] && [ "$sha" = "$hash" ] && [ -z "$missing" ]; then
    return 0
  fi
  if [ -n "$tree" ] && [ "$tree" != "$root" ]; then
    echo "icecheck: $ICECHECK_VENV holds an install of $tree; installing $root instead..." >&2
  else
    echo "icecheck: setting up $ICECHECK_VENV${extras:+ with [$extras]}..." >&2
  fi
  [ -x "$ICECHECK_VENV/bin/python" ] || python3 -m venv "$ICECHECK_VENV"
  # Extras already installed for this tree stay installed (pip -e replaces the whole install).
  local all="${have#,}"; all="${all%,}"
  for e in "${want[@]}"; do
    [ -n "$e" ] && [[ ",$all," != *",$e,"* ]] && all="${all:+$all,}$e"
  done
  local spec="$root"
  [ -n "$all" ] && spec="$root[$all]"
  # One line per step; pip's own output (setuptools' build warnings for the data folders the
  # package ships, about a thousand lines, and this machine's notes on missing find-links
  # folders) goes to a log, shown only when a step fails.
  local log="$ICECHECK_VENV/setup.log"
  : >"$log"
  echo "icecheck: set-up log: $log" >&2
  icecheck_step "upgrading pip" "$log" "$ICECHECK_VENV/bin/python" -m pip install -q \
    --disable-pip-version-check --upgrade pip
  icecheck_step "installing icecheck${all:+ with [$all]} and its pinned dependencies" "$log" \
    "$ICECHECK_VENV/bin/python" -m pip install -q --disable-pip-version-check -e "$spec"
  local tmp="$stamp.tmp.$$"
  printf 'tree=%s\npyproject=%s\nextras=,%s%s\n' "$root" "$hash" "$all" "${all:+,}" >"$tmp"
  mv -f "$tmp" "$stamp"
}
