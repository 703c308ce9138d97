#!/usr/bin/env bash
# Deploy the Workspace Daemon on a Sprite: first boot and every later boot.
# Idempotent: a second run with the same source changes nothing.
#
#   WSD_WORKSPACE=/workspace deploy/bootstrap.sh [--standalone]
#
# Environment: WSD_WORKSPACE (default /workspace), WSD_VENV (default
# $WSD_WORKSPACE/.os/.venv), WSD_VERSION (default: the source's git revision),
# PYTHON (default python3). --standalone also writes a supervisord.conf for a
# Sprite where nothing else runs supervisord.
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
workspace="${WSD_WORKSPACE:-/workspace}"
case "$workspace" in /*) ;; *) workspace="$PWD/$workspace" ;; esac
venv="${WSD_VENV:-$workspace/.os/.venv}"
case "$venv" in /*) ;; *) venv="$PWD/$venv" ;; esac
python="${PYTHON:-python3}"
version="${WSD_VERSION:-$(git -C "$src" describe --always --dirty 2>/dev/null || echo dev)}"

# A path the deploy cannot hold (a newline, a space before ; in supervisord's ini...) is
# refused here, in one line, before anything is made; `wsd bootstrap` asks the same. The
# standard library only (-I: nothing of the venv or the source folder is imported).
"$python" -I "$src/daemon/ops/deploy_paths.py" "$workspace" "$venv" "$@"

mkdir -p "$workspace/.os"
chmod 700 "$workspace/.os"

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
    echo "created virtual environment $venv"
fi

# Reinstall only when the source version changed (pip would rebuild every time).
stamp="$venv/.wsd-installed-version"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$version" ]; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade "$src"
    echo "$version" > "$stamp"
    echo "installed workspace-daemon $version into $venv"
fi

exec "$venv/bin/wsd" --workspace "$workspace" bootstrap \
    --version "$version" \
    --templates "$src/deploy/templates" \
    --supervisor "$src/deploy/supervisor" \
    --plugin "$src/deploy/claude-plugin" \
    --venv "$venv" "$@"
