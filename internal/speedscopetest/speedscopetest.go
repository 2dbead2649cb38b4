// Package speedscopetest checks speedscope files against the file format
// schema that speedscope itself publishes (file-format-schema.json in the
// npm package "speedscope", which scripts/test.sh unpacks into the cache
// directory). Tests that need it fail under CI=true when the schema is
// missing, and skip loudly otherwise.
package speedscopetest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
)

// SchemaPath returns where the schema is: $CLRDIAG_SPEEDSCOPE_SCHEMA, or
// speedscope/package/dist/release/file-format-schema.json under
// $CLRDIAG_CACHE (default: the module's .cache).
func SchemaPath() (string, error) {
	if p := os.Getenv("CLRDIAG_SPEEDSCOPE_SCHEMA"); p != "" {
		return p, nil
	}
	cache := os.Getenv("CLRDIAG_CACHE")
	if cache == "" {
		root, err := dotnettest.ModuleRoot()
		if err != nil {
			return "", err
		}
		cache = filepath.Join(root, ".cache")
	}
	return filepath.Join(cache, "speedscope", "package", "dist", "release", "file-format-schema.json"), nil
}

var (
	once   sync.Once
	schema *jsonschema.Schema
	errLd  error
)

func load() (*jsonschema.Schema, error) {
	once.Do(func() {
		path, err := SchemaPath()
		if err != nil {
			errLd = err
			return
		}
		b, err := os.ReadFile(path)
		if err != nil {
			errLd = fmt.Errorf("speedscope's schema: %w (scripts/test.sh unpacks the npm package speedscope into the cache)", err)
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			errLd = fmt.Errorf("%s: %w", path, err)
			return
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("file-format-schema.json", doc); err != nil {
			errLd = err
			return
		}
		schema, errLd = c.Compile("file-format-schema.json")
	})
	return schema, errLd
}

// Validate checks data against speedscope's schema, failing the test when
// it does not conform. Without the schema it fails under CI=true and
// otherwise logs loudly that the check was skipped (the rest of the test
// goes on).
func Validate(t testing.TB, data []byte) {
	t.Helper()
	s, err := load()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("speedscope schema check cannot run (CI=true): %v", err)
		}
		t.Logf("SKIPPING speedscope schema check: %v", err)
		return
	}
	if err := Check(s, data); err != nil {
		t.Errorf("not a valid speedscope file: %v", err)
	}
}

// Check validates data against a compiled schema.
func Check(s *jsonschema.Schema, data []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	var ve *jsonschema.ValidationError
	if err := s.Validate(inst); err != nil {
		if errors.As(err, &ve) {
			return fmt.Errorf("%v", ve)
		}
		return err
	}
	return nil
}
