package vocab

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// helpFlagRE is one flag of a help line's option column: one or two dashes, then a letter,
// then letters, digits and - _ . + (e.g. -ngl, --n-gpu-layers, --no-mmap, -hfr).
var helpFlagRE = regexp.MustCompile(`^--?[A-Za-z][A-Za-z0-9_.+-]*$`)

// ParseHelpFlags lists the flags a llama.cpp tool's --help output declares. It reads both
// layouts: llama-bench's ("  -m, --model <filename>    (default: …)") and llama-server's
// ("-ngl,  --gpu-layers, --n-gpu-layers N   max. number …", "--perf, --no-perf   …",
// "-kvo,  --kv-offload, -nkvo, --no-kv-offload" with its text on the next line). A line
// declares flags when it starts (after at most four spaces) with a flag; the flags run on
// while each is followed by a comma or directly by another flag, so argument names
// (N, FNAME, <n>, [on|off|auto]) and the description are not read. Description lines are
// indented further and never read, nor are section rules ("----- common params -----").
func ParseHelpFlags(text string) map[string]bool {
	flags := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		indent := len(line) - len(strings.TrimLeft(line, " \t"))
		if indent > 4 {
			continue
		}
		fields := strings.Fields(line)
		for i, tok := range fields {
			comma := strings.HasSuffix(tok, ",")
			name := strings.TrimSuffix(tok, ",")
			if !helpFlagRE.MatchString(name) {
				break
			}
			flags[name] = true
			if !comma && (i+1 >= len(fields) || !helpFlagRE.MatchString(strings.TrimSuffix(fields[i+1], ","))) {
				break
			}
		}
	}
	return flags
}

// UnknownFlags returns the flags of argv (tokens starting with "-" that are not negative
// numbers, such as the value of "--seed -1") that known does not list, each once, in argv
// order. A "--flag=value" token is looked up whole: llama.cpp's tools take a flag's value as
// the next argument and refuse the joined form as an invalid argument.
func UnknownFlags(args []string, known map[string]bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range args {
		if !strings.HasPrefix(a, "-") || isNegativeNumber(a) || known[a] || seen[a] {
			continue
		}
		seen[a] = true
		out = append(out, a)
	}
	return out
}

func isNegativeNumber(s string) bool {
	if len(s) < 2 || s[0] != '-' || !(s[1] >= '0' && s[1] <= '9' || s[1] == '.') {
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// SortedFlags lists a flag set in order (for messages and tests).
func SortedFlags(flags map[string]bool) []string {
	out := make([]string, 0, len(flags))
	for f := range flags {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}
