# bash completion for rbmemtrace(8)                                    -*- shell-script -*-
#
# Completes the subcommands, each subcommand's options (read from its own `--help`, argp's
# table, so that an option added to the binary completes without touching this file), the
# values of --format, --sort, --tree= and --empty-probes, and for -p the PIDs of the Ruby
# processes this user can see.  Needs nothing from the bash-completion package.

_rbmemtrace_subcommands="trace census top why merge fleet serve"

# The formats each subcommand's --format accepts (the format lists of cmd_trace.c and cmd_why.c,
# and of cli/option_groups.c for census and top, merge and fleet).
_rbmemtrace_formats() {
	case $1 in
	trace | merge) echo "text json folded pprof speedscope html" ;;
	why) echo "text json folded pprof html" ;;
	fleet) echo "text json pprof speedscope html" ;;
	serve) echo "" ;; # serve has no --format: it serves pprof
	*) echo "text json" ;;
	esac
}

# The options of `BINARY SUB --help`, short and long, cached per binary and subcommand (a few
# milliseconds to run, once a shell).  With ARG set, only those that take an argument.
declare -gA _rbmemtrace_option_cache 2>/dev/null
_rbmemtrace_options() {
	local bin=$1 sub=$2 want=${3:-all} key="$1 $2"
	if [[ -z ${_rbmemtrace_option_cache[$key]+set} ]]; then
		# Each line: the option, then "=" if it takes an argument ("[=" for optional is none).
		_rbmemtrace_option_cache[$key]=$(LC_ALL=C ARGP_HELP_FMT=rmargin=1000 \
			"$bin" "$sub" --help 2>/dev/null | sed -n \
			-e 's/^ \{1,6\}-\([^ ,-]\), --\([a-z][a-z-]*\)=.*/-\1=\n--\2=/p' \
			-e 's/^ \{1,6\}-\([^ ,-]\), --\([a-z][a-z-]*\).*/-\1\n--\2/p' \
			-e 's/^ \{1,6\}\(--[a-z][a-z-]*\)=.*/\1=/p' \
			-e 's/^ \{1,6\}\(--[a-z][a-z-]*\).*/\1/p')
	fi
	local opt
	# read, not an unquoted expansion: "-?" would glob.
	while IFS= read -r opt; do
		[[ $opt == "-?" ]] && continue # --help says the same
		if [[ $want == arg ]]; then
			[[ $opt == *= ]] && echo "${opt%=}"
		else
			echo "${opt%=}"
		fi
	done <<<"${_rbmemtrace_option_cache[$key]}"
}

# PIDs of Ruby processes: a libruby in their maps, or a ruby executable.  One grep and one
# find over /proc, not a process per PID: completion stays instant with thousands of them.
_rbmemtrace_ruby_pids() {
	{
		grep -l -s -F libruby /proc/[0-9]*/maps | sed 's|^/proc/\([0-9]*\)/maps$|\1|'
		find /proc -mindepth 2 -maxdepth 2 -name exe -lname '*/ruby*' 2>/dev/null |
			sed 's|^/proc/\([0-9]*\)/exe$|\1|'
	} | grep -x '[0-9]*' | sort -un
}

_rbmemtrace_reply() {
	mapfile -t COMPREPLY < <(compgen "$@")
}

_rbmemtrace() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev="" after_equals=""
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	# "--format=js": bash splits at "=" (COMP_WORDBREAKS), as "--format" "=" "js".
	if [[ $cur == = ]]; then
		cur=""
		after_equals=1
	elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
		after_equals=1
	fi
	COMPREPLY=()

	local bin=${COMP_WORDS[0]}
	type -P "$bin" >/dev/null 2>&1 || bin=rbmemtrace

	# main.c: a subcommand is argv[1] or nothing (then trace).
	local sub=trace first=1 i
	if ((COMP_CWORD > 1)) && [[ " $_rbmemtrace_subcommands " == *" ${COMP_WORDS[1]} "* ]]; then
		sub=${COMP_WORDS[1]}
		first=2
	fi

	# After "--": trace's command and its arguments; fleet's are the remote trace's options.
	for ((i = first; i < COMP_CWORD; i++)); do
		[[ ${COMP_WORDS[i]} == -- ]] || continue
		if [[ $sub == fleet ]]; then
			sub=trace
			first=$((i + 1))
			continue
		fi
		if ((i == COMP_CWORD - 1)); then
			_rbmemtrace_reply -c -- "$cur"
		else
			compopt -o filenames 2>/dev/null
			_rbmemtrace_reply -f -- "$cur"
		fi
		return 0
	done

	case $prev in
	--format)
		_rbmemtrace_reply -W "$(_rbmemtrace_formats "$sub")" -- "$cur"
		return 0
		;;
	--sort)
		_rbmemtrace_reply -W "live bytes change per-min allocs old name" -- "$cur"
		return 0
		;;
	--tree)
		# Its argument is optional, so only --tree=ORDER gives one.
		if [[ $after_equals ]]; then
			_rbmemtrace_reply -W "root callee" -- "$cur"
			return 0
		fi
		;;
	--empty-probes)
		_rbmemtrace_reply -W "uprobe uretprobe" -- "$cur"
		return 0
		;;
	-p | --pid)
		_rbmemtrace_reply -W "$(_rbmemtrace_ruby_pids)" -- "$cur"
		return 0
		;;
	--listen)
		_rbmemtrace_reply -W "127.0.0.1:6060 127.0.0.1:0 [::1]:6060" -- "$cur"
		return 0
		;;
	-o | --output | --hosts | --remote-path | --token-file | --basic-auth-file | --tls-cert | --tls-key)
		compopt -o filenames 2>/dev/null
		_rbmemtrace_reply -f -- "$cur"
		return 0
		;;
	esac
	# Any other option that takes an argument: a number, a regex, a name; nothing to offer.
	if [[ $prev == -* ]] && ((COMP_CWORD - 1 >= first)); then
		local opt
		while IFS= read -r opt; do
			[[ $prev == "$opt" ]] && return 0
		done < <(_rbmemtrace_options "$bin" "$sub" arg)
	fi

	if [[ $cur == -* ]]; then
		_rbmemtrace_reply -W "$(_rbmemtrace_options "$bin" "$sub")" -- "$cur"
	elif ((COMP_CWORD == 1)); then
		_rbmemtrace_reply -W "$_rbmemtrace_subcommands" -- "$cur"
	elif [[ $sub == merge ]]; then
		compopt -o filenames 2>/dev/null
		_rbmemtrace_reply -f -X '!*.json' -- "$cur"
		local dir
		while IFS= read -r dir; do COMPREPLY+=("$dir"); done < <(compgen -d -- "$cur")
	fi
	return 0
}

complete -F _rbmemtrace rbmemtrace
