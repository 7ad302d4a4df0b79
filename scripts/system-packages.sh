#!/usr/bin/env bash
# Best-effort install of the Debian packages some tests use: Mesa's EGL (PyBullet's EGL renderer on a CPU) and
# Chromium (the headless look at the HTML report). Without them those tests skip and say why; nothing else needs
# them. Runs only as root with apt-get present, and only when something is missing.
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
echo "installing system packages: ${missing[*]}" >&2
(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") \
  >/dev/null 2>&1 || echo "note: apt-get install ${missing[*]} failed: the EGL and browser tests will skip" >&2
exit 0
