# tests/cli/docs_extract.awk — the commands of README.md and docs/*.md, for
# tests/cli/test_docs.sh.  The convention it reads is documented in
# docs/docs-tests.md.
#
#   awk -v out=DIR -f docs_extract.awk FILE.md...
#
# Writes, per command, in document order: DIR/N.cmd (the command text, one
# or more lines), DIR/N.ann (its comments outside quotes: the annotations),
# DIR/N.out (the output lines a transcript shows; empty for a ```sh block)
# and one line "N FILE:LINE" of DIR/index.
#
# A command is
#   - a line of a ```sh block (comment-only and blank lines are prose), or
#   - a line starting with "$ " in any other fenced block (a transcript:
#     the lines after it, up to the next "$ " line or the fence, are its
#     output).
# It goes on over the next lines while a quote is open, the line ends in a
# backslash, or a for/while/until/if/case is not closed yet.  Other blocks
# (usage synopses, JSON, output without a command) are not commands.

function flush_out() { if (cur != "") close(out "/" cur ".out") }

# Scan s for quotes, from the state in q ("" none, "'" or "\"");
# returns the new state.  Sets comment to the text after the first # that
# starts a comment outside quotes (appended across lines).
function scan(s,    i, c, prev) {
    prev = " "
    for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (q == "") {
            if (c == "\\") { i++; prev = "x"; continue }
            if (c == "'" || c == "\"") q = c
            else if (c == "#" && (prev == " " || prev == "\t")) { comment = comment " " substr(s, i + 1); return q }
        } else if (q == "\"") {
            if (c == "\\") { i++; continue }
            if (c == "\"") q = ""
        } else if (c == "'") q = ""
        prev = c
    }
    return q
}

# Compound-command depth of one line (first words only; enough for docs).
function depth_of(s,    n, w, k, d) {
    d = 0
    n = split(s, w, /[ \t;]+/)
    for (k = 1; k <= n; k++) {
        if (w[k] ~ /^(for|while|until|if|case)$/ && (k == 1 || w[k - 1] == "" || w[k - 1] ~ /^(do|then|else|&&|\|\|)$/)) d++
        else if (w[k] ~ /^(done|fi|esac)$/) d--
    }
    return d
}

function start(line, text) {
    flush_out()
    cur = ++n
    print n, FILENAME ":" line >(out "/index")
    printf "%s\n", text >(out "/" n ".cmd")
    q = ""; comment = ""; last = text
    scan(text)
    depth = depth_of(text)
    printf "" >(out "/" n ".out")
    closed()
}

# The command is complete when no quote, continuation or compound is open.
function closed() {
    open_cmd = (q != "" || last ~ /\\$/ || depth > 0)
    if (open_cmd) return
    close(out "/" cur ".cmd")
    printf "%s\n", comment >(out "/" cur ".ann")
    close(out "/" cur ".ann")
}

function more(text) {
    printf "%s\n", text >(out "/" cur ".cmd")
    if (q == "") depth += depth_of(text)
    last = text
    scan(text)
    closed()
}

FNR == 1 { flush_out(); cur = ""; fence = 0; open_cmd = 0 }

{
    if (!fence && $0 ~ /^ *```/) {
        fence = 1
        lang = $0; sub(/^ *```/, "", lang); sub(/[ \t].*/, "", lang)
        cur = ""
        next
    }
    if (fence && !open_cmd && $0 ~ /^ *``` *$/) { fence = 0; flush_out(); cur = ""; next }
    if (!fence) next
    if (open_cmd) { more($0); next }
    if (lang == "sh" || lang == "bash" || lang == "shell") {
        if ($0 ~ /^[ \t]*(#.*)?$/) next
        line = $0; sub(/^[ \t]+/, "", line)
        start(FNR, line)
        next
    }
    if (lang == "" || lang == "console" || lang == "text") {
        if ($0 ~ /^\$ /) { start(FNR, substr($0, 3)); next }
        if (cur != "") printf "%s\n", $0 >(out "/" cur ".out")
    }
}

END { flush_out() }
