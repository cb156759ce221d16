#!/usr/bin/env bash
# Installs Debian's Chromium and ChromeDriver for the dashboard's browser tests
# (tests/tests/dashboard*.rs) when they are missing. No tool downloads a browser of its own.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    exit 0
fi
echo "browser: installing Debian's chromium and chromium-driver"
sudo=""
if [ "$(id -u)" != 0 ]; then
    sudo="sudo"
fi
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q chromium chromium-driver
for tool in /usr/bin/chromium /usr/bin/chromedriver; do
    if [ ! -x "$tool" ]; then
        echo "error: $tool is still missing: install Debian's chromium and chromium-driver" >&2
        exit 1
    fi
done
