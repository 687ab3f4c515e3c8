#!/bin/bash
# `make install` into a DESTDIR puts the binary, the man page and the bash and
# zsh completions where PREFIX says; the installed man page renders with
# `man -l` and is what `man tcheck-bpf` finds under that prefix; the
# completions offer the verbs and each verb's options as its --help lists
# them; `make uninstall` removes those files and nothing else.
source "$(dirname "$0")/lib.sh"
command -v man >/dev/null || skip "man is not installed"
dest="$SCRATCH/dest"
prefix=/usr/local
make -s -C "$ROOT" install DESTDIR="$dest" PREFIX="$prefix" >"$SCRATCH/install.log" 2>&1 ||
	fail "make install failed: $(cat "$SCRATCH/install.log")"
bin="$dest$prefix/bin/tcheck-bpf"
page="$dest$prefix/share/man/man1/tcheck-bpf.1"
bash_completion="$dest$prefix/share/bash-completion/completions/tcheck-bpf"
zsh_completion="$dest$prefix/share/zsh/site-functions/_tcheck-bpf"
for file in "$bin" "$page" "$bash_completion" "$zsh_completion"; do
	[ -f "$file" ] || fail "make install did not write $file"
done
[ "$(stat -c %a "$bin")" = 755 ] || fail "the binary is installed with mode $(stat -c %a "$bin")"
[ "$(stat -c %a "$page")" = 644 ] || fail "the man page is installed with mode $(stat -c %a "$page")"
[ "$("$bin" --version)" = "$("$TCHECK" --version)" ] || fail "the installed binary is another build"
cmp -s "$page" "$ROOT/man/tcheck-bpf.1" || fail "the installed man page is not man/tcheck-bpf.1"

# The page renders, and `man NAME` finds it in the prefix's man tree.
MANWIDTH=80 man -l "$page" >"$SCRATCH/page.txt" 2>"$SCRATCH/page.err" || fail "man -l failed: $(cat "$SCRATCH/page.err")"
grep -Eq "tcheck-bpf +- +watch +distributed +training +jobs" "$SCRATCH/page.txt" || fail "man -l rendered no NAME line"
grep -q "^EXIT STATUS" "$SCRATCH/page.txt" || fail "man -l rendered no EXIT STATUS section"
MANWIDTH=80 man -M "$dest$prefix/share/man" tcheck-bpf >"$SCRATCH/found.txt" 2>"$SCRATCH/found.err" ||
	fail "man tcheck-bpf does not find the installed page: $(cat "$SCRATCH/found.err")"
cmp -s "$SCRATCH/page.txt" "$SCRATCH/found.txt" || fail "man tcheck-bpf shows another page than man -l"

# bash: the function the completion registers, called as bash calls it.
complete_bash() { # WORDS...: the completions of the last word
	PATH="$dest$prefix/bin:$PATH" bash -c '
		source "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		_tcheck_bpf; printf "%s\n" "${COMPREPLY[@]}"' _ "$bash_completion" "$@"
}
[ "$(complete_bash tcheck-bpf ch)" = check ] || fail "bash: 'ch' completes to $(complete_bash tcheck-bpf ch)"
[ "$(complete_bash tcheck-bpf -v an | tr '\n' ' ')" = "analyze " ] || fail "bash: a verb after -v"
grep -qx -- --hang-factor <<<"$(complete_bash tcheck-bpf check --hang-f)" || fail "bash: check --hang-f"
[ "$(complete_bash tcheck-bpf agent --re | tr '\n' ' ')" = "--retention " ] ||
	fail "bash: agent --re completes to $(complete_bash tcheck-bpf agent --re)"
[ "$(complete_bash tcheck-bpf dump x.trace -f "" | tr '\n' ' ')" = "jsonl perfetto " ] || fail "bash: dump -f"
# Every option of every verb's --help is offered.
for verb in $("$TCHECK" --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p'); do
	expected=$("$TCHECK" "$verb" --help | grep -oE '^ +(-[a-zA-Z], )?--[a-z][a-z0-9-]*' |
		grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
	[ -n "$expected" ] || fail "$verb --help lists no option"
	[ "$(complete_bash tcheck-bpf "$verb" -- | sort -u)" = "$expected" ] ||
		fail "bash: $verb's options are not its --help's"
done

# zsh: the completion function with compadd, _describe and _files recorded.
if command -v zsh >/dev/null; then
	complete_zsh() { # WORDS...
		PATH="$dest$prefix/bin:$PATH" zsh -f -c '
			compadd() { [ "$1" = -a ] && print -l -- ${(P)2} || { [ "$1" = -- ] && shift; print -l -- "$@"; } }
			_describe() { print -l -- ${(P)2%%:*} }
			_files() { print FILES }
			source "$1"; shift
			words=("$@"); CURRENT=$#; PREFIX=${words[CURRENT]}
			_tcheck-bpf' _ "$zsh_completion" "$@" | grep -- "^${*: -1}"
	}
	grep -qx check <<<"$(complete_zsh tcheck-bpf ch)" || fail "zsh: 'ch' gives $(complete_zsh tcheck-bpf ch)"
	grep -qx -- --hang-factor <<<"$(complete_zsh tcheck-bpf check --hang-f)" || fail "zsh: check --hang-f"
	grep -qx -- --retention <<<"$(complete_zsh tcheck-bpf -v agent --re)" || fail "zsh: -v agent --re"
fi

# uninstall removes the four files and leaves what else is there.
touch "$dest$prefix/share/man/man1/other.1"
make -s -C "$ROOT" uninstall DESTDIR="$dest" PREFIX="$prefix" >"$SCRATCH/uninstall.log" 2>&1 ||
	fail "make uninstall failed: $(cat "$SCRATCH/uninstall.log")"
for file in "$bin" "$page" "$bash_completion" "$zsh_completion"; do
	[ ! -e "$file" ] || fail "make uninstall left $file"
done
[ -f "$dest$prefix/share/man/man1/other.1" ] || fail "make uninstall removed another file"
echo ok
