#!/usr/bin/env bash
# Best-effort install of the Debian packages some tests use: Mesa's EGL (PyBullet's EGL renderer on a CPU) and
# Chromium (the headless look at the HTML report). Without them those tests skip and say why; nothing else needs
# them. Runs only as root with apt-get present, and only when something is missing. Never fails `make setup`:
# when apt cannot install a package, one line says which and why (apt's own error line), and setup goes on.
set -uo pipefail
pkgs=(libegl1 libgl1-mesa-dri libegl-mesa0 chromium)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "note: system packages ${missing[*]} missing and not root: the EGL and browser tests will skip" >&2
  exit 0
fi

log=$(mktemp "${TMPDIR:-/tmp}/spatialact-apt.XXXXXX") || log=/dev/null
trap '[ "$log" != /dev/null ] && rm -f "$log"' EXIT

# The reason apt gave: its last error line ("E: ..."), else its last warning ("W: ..."), else its last line;
# whitespace squeezed, cut to 200 characters so it stays one line.
reason() {
  local line
  line=$(grep -E '^E: ' "$log" | tail -n 1)
  [ -n "$line" ] || line=$(grep -E '^(W|Err): ?' "$log" | tail -n 1)
  [ -n "$line" ] || line=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1)
  [ -n "$line" ] || line="exit status $1, no message"
  printf '%s' "$line" | tr -s '[:space:]' ' ' | cut -c1-200
}

echo "installing system packages: ${missing[*]}" >&2
update_note=""
apt-get update -qq >"$log" 2>&1
rc=$?
[ $rc -eq 0 ] || update_note=" (apt-get update failed too: $(reason $rc))"
if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >"$log" 2>&1; then
  exit 0
fi
# Together they failed: try each alone, so one unavailable package does not keep the others out.
for p in "${missing[@]}"; do
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >"$log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "note: apt-get install $p failed: $(reason $rc)${update_note}; the tests that need it will skip" >&2
  fi
done
exit 0
