#!/bin/bash
# The man page is clean under mandoc -T lint and groff -ww, renders at 80
# columns without a warning or a hyphenated word, names every command in its
# SYNOPSIS, and documents, in each command's OPTIONS subsection, exactly the
# options that command's --help lists (a tagged paragraph each).
source "$(dirname "$0")/lib.sh"
page="$ROOT/man/tcheck-bpf.1"
command -v mandoc >/dev/null || skip "mandoc is not installed (make deps)"
lint=$(mandoc -T lint "$page" 2>&1) || [ -z "$lint" ] || fail "mandoc -T lint: $lint"
[ -z "$lint" ] || fail "mandoc -T lint: $lint"
warnings=$(groff -man -ww -z "$page" 2>&1)
[ -z "$warnings" ] || fail "groff -ww: $warnings"
LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$page" >"$SCRATCH/page.txt" 2>"$SCRATCH/page.err" ||
	fail "man -l failed: $(cat "$SCRATCH/page.err")"
[ ! -s "$SCRATCH/page.err" ] || fail "man -l warned: $(cat "$SCRATCH/page.err")"
! grep -n $'\u2010$' "$SCRATCH/page.txt" || fail "the rendered page hyphenates words (above)"

python3 - "$TCHECK" "$page" <<'PY' || fail "the man page and the commands' --help disagree (above)"
import re, subprocess, sys
tcheck, page = sys.argv[1:3]
OPTION = re.compile(r"(?<![\w-])(--?[a-zA-Z][a-zA-Z0-9-]*)")

def help_options(*arguments):
    text = subprocess.run([tcheck, *arguments, "--help"], capture_output=True, text=True).stdout
    found = set()
    for line in text.splitlines():
        m = re.match(r"^\s+((?:-[a-zA-Z], )?--[a-z][a-z0-9-]*)", line)
        if m:
            found.update(OPTION.findall(m.group(1)))
    return found - {"-h", "--help"}

def plain(roff):
    return re.sub(r"\\f[BIRP]|\\&", "", roff).replace("\\-", "-")

source = open(page).read().splitlines()
sections, section, subsection, take_tag = {}, None, None, False
synopsis = []
for line in source:
    if line.startswith(".SH "):
        section, subsection = line[4:].strip('"'), None
        continue
    if section == "SYNOPSIS":
        synopsis.append(plain(line))
    if section != "OPTIONS":
        continue
    if line.startswith(".SS "):
        subsection = plain(line[4:]).strip('"')
        sections[subsection] = set()
    elif line.startswith((".TP", ".TQ")):
        take_tag = True
    elif take_tag:
        take_tag = False
        if subsection:
            sections[subsection].update(OPTION.findall(plain(line)))

verbs = re.findall(r"^  ([a-z]+)  ", subprocess.run([tcheck, "--help"], capture_output=True,
                                                      text=True).stdout, re.M)
problems = []
synopsis_text = " ".join(synopsis)
for verb in verbs:
    if f"tcheck-bpf {verb}" not in synopsis_text:
        problems.append(f"SYNOPSIS lacks {verb}")
# Each command's subsection: the one named after it alone, or in a list ("record, attach").
wanted = {verb: [verb] for verb in verbs}
wanted["check --rules"] = ["check", "--rules", "RULES"]
for verb, arguments in wanted.items():
    names = [name for name in sections if verb in [n.strip() for n in name.split(",")]]
    if len(names) != 1:
        problems.append(f"OPTIONS has {len(names)} subsections for {verb}, not 1")
        continue
    documented, listed = sections[names[0]], help_options(*arguments)
    for option in sorted(listed - documented):
        problems.append(f"{verb}: {option} is in --help but not in the man page")
    for option in sorted(documented - listed):
        problems.append(f"{verb}: {option} is in the man page but not in --help")
print("\n".join(problems))
print(f"{len(wanted)} commands, {sum(len(v) for v in sections.values())} options compared")
sys.exit(1 if problems else 0)
PY
echo ok
