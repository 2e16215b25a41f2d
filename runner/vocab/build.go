package vocab

// Source says where a binaries folder came from.
type Source string

const (
	SourceFlag   Source = "--llama-dir"
	SourceEnv    Source = "SPARKBENCH_LLAMA_DIR"
	SourcePrefix Source = "installed prefix"
	SourcePath   Source = "PATH"
)

// Location is a validated binaries folder.
type Location struct {
	Dir    string // absolute path of the folder holding the tools
	Source Source
	Bench  string // absolute path of llama-bench
	Server string // absolute path of llama-server
}

// Build describes a binaries folder as its tools report it.
type Build struct {
	Location
	VersionLine string   // e.g. "version: 0.7.0 (build 11669, commit Debian)"
	Version     string   // e.g. "0.7.0"
	BuildNumber int      // e.g. 11669
	Commit      string   // e.g. "Debian" for Debian's reproducible build, else a git hash
	BuiltWith   string   // e.g. "GNU 16.2.0 for Linux x86_64"
	Backends    []string // backend libraries loaded at start-up, e.g. "CPU (libggml-cpu-zen4.so)"
	Devices     []Device // from llama-bench --list-devices (CPU-only builds list none)
	Binaries    []Binary // SHA-256 of each tool used
	// Libraries are the llama.cpp libraries the tools run with (libllama, libggml*, the loaded
	// backends), hashed (Libraries): they hold the code a build is.
	Libraries []Binary `json:",omitempty"`
}

// Device is one line of --list-devices: "  Vulkan0: NVIDIA ... (24576 MiB, 23000 MiB free)".
type Device struct {
	Name        string
	Description string
	TotalMiB    int64
	FreeMiB     int64
}

// Binary is one executable with its content hash.
type Binary struct {
	Name   string
	Path   string
	Size   int64
	SHA256 string
}
