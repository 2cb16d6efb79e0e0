# Shared set-up for bin/icecheck and bin/test: a virtualenv at $ICECHECK_VENV (default .venv),
# reinstalled only when pyproject.toml changes or new extras are asked for.
icecheck_bootstrap() {
  local extras="$1"
  ICECHECK_VENV="${ICECHECK_VENV:-$root/.venv}"
  export ICECHECK_VENV
  local stamp="$ICECHECK_VENV/.installed${extras:+-$extras}"
  if [ -x "$ICECHECK_VENV/bin/icecheck" ] && [ -f "$stamp" ] && [ "$stamp" -nt "$root/pyproject.toml" ]; then
    return 0
  fi
  command -v python3 >/dev/null || { echo "icecheck: python3 (3.11 or later) is required" >&2; exit 2; }
  echo "icecheck: setting up $ICECHECK_VENV${extras:+ with [$extras]} (first run only)..." >&2
  [ -x "$ICECHECK_VENV/bin/python" ] || python3 -m venv "$ICECHECK_VENV"
  local spec="$root"
  [ -n "$extras" ] && spec="$root[$extras]"
  # (This machine's pip configuration names find-links folders that may not exist; pip warns
  # about each. Those lines are noise; every other message goes through.)
  "$ICECHECK_VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2) >&2
  "$ICECHECK_VENV/bin/python" -m pip install -q --disable-pip-version-check -e "$spec" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2) >&2
  touch "$stamp"
}
