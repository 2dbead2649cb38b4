package rules

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A node is one key of the configuration, as Microsoft.Extensions.Configuration
// sees it: keys are compared without regard to case, every value is a string,
// and an array is a section whose keys are 0, 1, 2, ... Files (JSON, YAML) and
// environment variables are all flattened to this one form, so a rule reads the
// same whichever source wrote it and a later source overrides single keys of
// an earlier one.
type node struct {
	name     string // the key as first written
	value    *string
	children map[string]*node // by lower-case key
	order    []string         // lower-case keys in first-seen order
	source   string           // where the value came from (file, env)
}

func newNode(name string) *node { return &node{name: name} }

// child returns the child named key (any case), or nil.
func (n *node) child(key string) *node {
	if n == nil || n.children == nil {
		return nil
	}
	return n.children[strings.ToLower(key)]
}

// ensure returns the child named key, creating it.
func (n *node) ensure(key string) *node {
	lk := strings.ToLower(key)
	if c := n.children[lk]; c != nil {
		return c
	}
	if n.children == nil {
		n.children = map[string]*node{}
	}
	c := newNode(key)
	n.children[lk] = c
	n.order = append(n.order, lk)
	return c
}

// set stores value at the key path, as a later source overriding an earlier
// one: a value replaces a value; a section keeps its other keys.
func (n *node) set(path []string, value, source string) {
	cur := n
	for _, k := range path {
		cur = cur.ensure(k)
	}
	v := value
	cur.value = &v
	cur.source = source
}

// kids returns the children in first-seen order; for an array (all keys
// numbers) in numeric order, as the .NET binder reads them.
func (n *node) kids() []*node {
	if n == nil {
		return nil
	}
	out := make([]*node, 0, len(n.order))
	for _, k := range n.order {
		out = append(out, n.children[k])
	}
	if n.isArray() {
		sort.SliceStable(out, func(i, j int) bool {
			a, _ := strconv.Atoi(out[i].name)
			b, _ := strconv.Atoi(out[j].name)
			return a < b
		})
	}
	return out
}

// isArray reports whether every key of n is a non-negative number.
func (n *node) isArray() bool {
	if n == nil || len(n.order) == 0 {
		return false
	}
	for _, k := range n.order {
		if i, err := strconv.Atoi(k); err != nil || i < 0 || strconv.Itoa(i) != k {
			return false
		}
	}
	return true
}

// flattenValue adds a decoded JSON or YAML value at path.
func (n *node) flattenValue(path []string, v any, source string) error {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 && len(path) > 0 {
			n.ensurePath(path)
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		// encoding/json and yaml lose the order of an object's keys;
		// sort so that listings are stable.
		sort.Strings(keys)
		for _, k := range keys {
			if err := n.flattenValue(append(path[:len(path):len(path)], k), x[k], source); err != nil {
				return err
			}
		}
	case []any:
		if len(x) == 0 && len(path) > 0 {
			n.ensurePath(path)
		}
		for i, e := range x {
			if err := n.flattenValue(append(path[:len(path):len(path)], strconv.Itoa(i)), e, source); err != nil {
				return err
			}
		}
	case nil:
		n.set(path, "", source)
	case string:
		n.set(path, x, source)
	case bool:
		n.set(path, strconv.FormatBool(x), source)
	case json.Number:
		n.set(path, x.String(), source)
	case float64:
		n.set(path, strconv.FormatFloat(x, 'g', -1, 64), source)
	case int:
		n.set(path, strconv.Itoa(x), source)
	case int64:
		n.set(path, strconv.FormatInt(x, 10), source)
	case uint64:
		n.set(path, strconv.FormatUint(x, 10), source)
	default:
		if f, ok := x.(float32); ok && !math.IsNaN(float64(f)) {
			n.set(path, strconv.FormatFloat(float64(f), 'g', -1, 32), source)
			return nil
		}
		return fmt.Errorf("%s: %s: unsupported value of type %T", source, strings.Join(path, "."), v)
	}
	return nil
}

func (n *node) ensurePath(path []string) {
	cur := n
	for _, k := range path {
		cur = cur.ensure(k)
	}
}

// parseJSON flattens a JSON document into n.
func (n *node) parseJSON(data []byte, source string) error {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%s: not valid JSON: %w", source, err)
	}
	if dec.More() {
		return fmt.Errorf("%s: not valid JSON: more than one value", source)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("%s: the configuration must be a JSON object (got %s)", source, jsonKind(v))
	}
	return n.flattenValue(nil, v, source)
}

// parseYAML flattens a YAML document into n. Only plain data is accepted:
// mappings with string keys, sequences and scalars.
func (n *node) parseYAML(data []byte, source string) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: not valid YAML: %w", source, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil // an empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: line %d: the configuration must be a mapping of keys to values", source, root.Line)
	}
	return n.flattenYAML(nil, root, source, 0)
}

// maxYAMLDepth bounds the nesting a YAML file may have (aliases could
// otherwise make a small file expand without bound).
const maxYAMLDepth = 32

func (n *node) flattenYAML(path []string, y *yaml.Node, source string, depth int) error {
	if depth > maxYAMLDepth {
		return fmt.Errorf("%s: line %d: nested more than %d levels deep", source, y.Line, maxYAMLDepth)
	}
	switch y.Kind {
	case yaml.DocumentNode:
		for _, c := range y.Content {
			if err := n.flattenYAML(path, c, source, depth+1); err != nil {
				return err
			}
		}
	case yaml.AliasNode:
		return fmt.Errorf("%s: line %d: YAML aliases are not supported; write the value out", source, y.Line)
	case yaml.MappingNode:
		if len(y.Content) == 0 && len(path) > 0 {
			n.ensurePath(path)
		}
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("%s: line %d: a key must be a plain string", source, k.Line)
			}
			if k.Tag == "!!merge" {
				return fmt.Errorf("%s: line %d: YAML merge keys (<<) are not supported; write the keys out", source, k.Line)
			}
			if k.Value == "" || strings.Contains(k.Value, ":") {
				return fmt.Errorf("%s: line %d: key %q: keys must be non-empty and must not contain ':'", source, k.Line, k.Value)
			}
			if err := n.flattenYAML(append(path[:len(path):len(path)], k.Value), v, source, depth+1); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		if len(y.Content) == 0 && len(path) > 0 {
			n.ensurePath(path)
		}
		for i, c := range y.Content {
			if err := n.flattenYAML(append(path[:len(path):len(path)], strconv.Itoa(i)), c, source, depth+1); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		if y.Tag == "!!null" {
			n.set(path, "", source)
		} else {
			n.set(path, y.Value, source)
		}
	}
	return nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case nil:
		return "null"
	case bool:
		return "a boolean"
	}
	return "a number"
}

// EnvPrefix is the prefix dotnet-monitor gives its environment variables;
// variables without it are read too (CollectionRules__NAME__...), as a
// Kubernetes ConfigMap mounted as environment writes them.
const EnvPrefix = "DotnetMonitor_"

// envSections are the top-level sections read from the environment: the
// rules, their defaults and the egress providers they name.
var envSections = []string{"CollectionRules", "CollectionRuleDefaults", "Egress"}

// parseEnv adds the variables of environ ("KEY=value") that belong to the
// rule configuration: KEY is DotnetMonitor_SECTION__A__B or SECTION__A__B
// (":" is accepted for "__"), SECTION one of CollectionRules,
// CollectionRuleDefaults and Egress, or of extra (the sections of
// LoadOptions.Sections). The prefixed form wins over the plain one.
func (n *node) parseEnv(environ []string, extra []string) {
	var plain, prefixed [][2]string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		isPrefixed := len(k) > len(EnvPrefix) && strings.EqualFold(k[:len(EnvPrefix)], EnvPrefix)
		if isPrefixed {
			k = k[len(EnvPrefix):]
		}
		k = strings.ReplaceAll(k, "__", ":")
		sect, _, _ := strings.Cut(k, ":")
		known := false
		for _, s := range envSections {
			if strings.EqualFold(sect, s) {
				known = true
			}
		}
		for _, s := range extra {
			if strings.EqualFold(sect, s) {
				known = true
			}
		}
		if !known || !strings.Contains(k, ":") {
			continue
		}
		if isPrefixed {
			prefixed = append(prefixed, [2]string{k, v})
		} else {
			plain = append(plain, [2]string{k, v})
		}
	}
	for _, list := range [][][2]string{plain, prefixed} {
		sort.Slice(list, func(i, j int) bool { return list[i][0] < list[j][0] })
		for _, kv := range list {
			parts := strings.Split(kv[0], ":")
			ok := true
			for _, p := range parts {
				if p == "" {
					ok = false
				}
			}
			if ok {
				n.set(parts, kv[1], "environment")
			}
		}
	}
}
