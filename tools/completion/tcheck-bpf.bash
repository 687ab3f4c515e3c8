# bash completion for tcheck-bpf: verbs, then each verb's options as its own
# --help lists them (so the completion never lags the binary), then files.
# Installed by `make install` into share/bash-completion/completions.

_tcheck_bpf_verb_options()
{
	"$1" "$2" --help 2>/dev/null |
		grep -oE '^ +(-[a-zA-Z], )?--[a-z][a-z0-9-]*' | grep -oE -- '--[a-z][a-z0-9-]*'
}

_tcheck_bpf()
{
	local program=${COMP_WORDS[0]} current=${COMP_WORDS[COMP_CWORD]} verb= i
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-*) ;;
		*) verb=${COMP_WORDS[i]}; break ;;
		esac
	done
	if [ -z "$verb" ]; then
		if [[ $current == -* ]]; then
			COMPREPLY=($(compgen -W "-v -vv --quiet --version --help" -- "$current"))
		else
			COMPREPLY=($(compgen -W "$("$program" --help 2>/dev/null |
				sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p')" -- "$current"))
		fi
		return
	fi
	if [[ $current == -* ]]; then
		COMPREPLY=($(compgen -W "$(_tcheck_bpf_verb_options "$program" "$verb")" -- "$current"))
		return
	fi
	case ${COMP_WORDS[COMP_CWORD - 1]} in
	-f | --format) COMPREPLY=($(compgen -W "jsonl perfetto" -- "$current")) ;;
	*) COMPREPLY=($(compgen -f -- "$current")) ;;
	esac
}
complete -o filenames -F _tcheck_bpf tcheck-bpf
