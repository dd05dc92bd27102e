#!/usr/bin/env bash
# Builds the API reference of the public headers (include/swl, without the detail folders) with doxygen,
# installing doxygen when it is missing, into build-docs/api/html. Fails on any doxygen warning: an
# undocumented public name, or a comment doxygen cannot read, fails it; so does a public name doxygen does
# not warn about (an enumerator, a destructor, ...) left without a comment (scripts/check_api_docs.py).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

install_missing doxygen python3
# a fresh tree: no page of a renamed class lingers; doxygen makes only the last folder of its output path
rm -rf build-docs/api && mkdir -p build-docs/api
doxygen docs/api/Doxyfile
python3 scripts/check_api_docs.py build-docs/api/xml
echo "API reference: $PWD/build-docs/api/html/index.html"
