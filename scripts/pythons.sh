# Sourced by scripts/matrix.sh and scripts/package.sh: the Python each supported Django runs on.
# The sourcing script defines PYTHON_FOR (Django version -> Python version, "" for the Python
# running it) and log().

python_for() {
    # The interpreter for Django $1: pyenv's newest of the wanted version, else pythonX.Y on
    # PATH, else (with a note) python3.
    local wanted="${PYTHON_FOR[$1]}"
    if [[ -z "$wanted" ]]; then
        command -v python3
        return
    fi
    local found
    found="$(ls -d "$(pyenv root 2>/dev/null || echo /nonexistent)"/versions/"$wanted"*/bin/python 2>/dev/null \
        | sort -V | tail -1 || true)"
    [[ -z "$found" ]] && found="$(command -v "python$wanted" || true)"
    if [[ -z "$found" ]]; then
        log "no Python $wanted (pyenv or PATH) for Django $1: using $(command -v python3)"
        found="$(command -v python3)"
    fi
    echo "$found"
}
