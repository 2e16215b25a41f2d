package llamacpp

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
)

// TokenizeTool is llama.cpp's tokenizer tool: it loads a model's vocabulary only.
const TokenizeTool = "llama-tokenize"

// TokenizeToolPath returns the path of llama-tokenize beside the folder's tools, or a
// *LocateError naming the installer.
func TokenizeToolPath(loc Location) (string, error) { return ToolIn(loc, TokenizeTool) }

var tokenCountRE = regexp.MustCompile(`(?m)^Total number of tokens: (\d+)\s*$`)

// CountTokens is how many tokens model's tokenizer makes of a text file (llama-tokenize
// --show-count, with the BOS token the model adds, as llama-perplexity tokenizes it), bounded
// by MetaTimeout.
func CountTokens(ctx context.Context, tool, model, file string, env []string) (int, error) {
	out, err := RunMetaEnv(ctx, MetaTimeout, env, tool, "-m", model, "-f", file, "--ids", "--show-count", "--log-disable")
	if err != nil {
		return 0, fmt.Errorf("%s: %w", TokenizeTool, err)
	}
	m := tokenCountRE.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return 0, fmt.Errorf("%s printed no token count (want a line \"Total number of tokens: N\"): %s", TokenizeTool, lastLines(out, 3))
	}
	return strconv.Atoi(m[len(m)-1][1])
}
