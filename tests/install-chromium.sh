#!/usr/bin/env bash
# Debian's chromium for the browser test (tests/test_web.py drives it through Playwright; no browser
# download). Installs it where apt-get can (root); otherwise says so, and that test is skipped.
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
        && exit 0
fi
echo "chromium is not installed (apt-get install -y chromium): the browser test will be skipped" >&2
