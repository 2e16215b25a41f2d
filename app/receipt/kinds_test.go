package receipt

import (
	"strings"
	"testing"

	"sparkbench/app/canon"
)

// A study kind that registers its bundles is written (Finish) and verified (Verify) by the
// same code as throughput and capacity, with nothing in Assemble, Finish, Verify or
// RenderPlots naming it; a bundle of an unregistered kind is refused with the kinds there are.
func TestARegisteredBundleKindVerifies(t *testing.T) {
	const kind = "test-echo"
	t.Cleanup(RegisterBundleKind(BundleKind{
		Kind:    kind,
		Excerpt: func(Files, *Index) (int64, bool) { return 0, false },
		Assemble: func(files Files, _ *Index) ([]byte, []byte, error) {
			raw, err := need(files, "raw/echo.txt")
			if err != nil {
				return nil, nil, err
			}
			js, err := canon.Marshal(map[string]string{"echo": string(raw)})
			return js, []byte("# echo\n\n" + string(raw) + "\n"), err
		},
		Charts: func([]byte) ([]NamedChart, error) { return nil, nil },
	}))
	ix, err := canon.Marshal(Index{Schema: SchemaBundle, Kind: kind, Sparkbench: "sparkbench test"})
	if err != nil {
		t.Fatal(err)
	}
	files := Files{FileIndex: ix, "raw/echo.txt": []byte("hello")}
	if err := Finish(files); err != nil {
		t.Fatal(err)
	}
	if string(files[FileReceipt]) != "# echo\n\nhello\n" || files[FileSums] == nil {
		t.Fatalf("finished bundle: %q, sums %q", files[FileReceipt], files[FileSums])
	}
	if rep := Verify(files, VerifyOptions{}); !rep.OK() || rep.Kind != kind {
		t.Fatalf("verify: %+v", rep)
	}
	files["raw/echo.txt"] = []byte("changed")
	if rep := Verify(files, VerifyOptions{}); rep.OK() {
		t.Fatal("a changed raw file verified")
	}

	other, _ := canon.Marshal(Index{Schema: SchemaBundle, Kind: "no-such-kind", Sparkbench: "sparkbench test"})
	_, err = ReadIndex(Files{FileIndex: other})
	if err == nil || !strings.Contains(err.Error(), `kind "no-such-kind", want "throughput", "capacity" or "test-echo"`) {
		t.Fatalf("unknown kind: %v", err)
	}
}
