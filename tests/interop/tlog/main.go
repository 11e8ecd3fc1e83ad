// Command tlogcheck verifies a C2SP tlog-tiles log with Go's own tile reader
// (golang.org/x/mod/sumdb/tlog), knowing nothing of tenure: it reads the
// checkpoint (verifying its signed note with -vkey), authenticates every tile
// it uses against the checkpoint's root, proves the inclusion of every entry
// of the entry bundles and, with -old SIZE:ROOT, the consistency of an older
// checkpoint with this one.
//
// Usage: tlogcheck [-vkey VKEY] [-old SIZE:BASE64ROOT] BASE
// BASE is a URL (http://host:port) or a folder written by tenure export --tiles.
//
// With -proof FILE it checks a c2sp.org/tlog-proof instead: the checkpoint's
// signature (-vkey) and the inclusion of the entry its extra line carries.
package main

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

const height = 8

func main() {
	vkey := flag.String("vkey", "", "the log's verifier key (signed-note vkey)")
	old := flag.String("old", "", "an older checkpoint as SIZE:BASE64ROOT to prove consistent")
	proof := flag.String("proof", "", "a c2sp.org/tlog-proof file to check instead")
	flag.Parse()
	if *proof != "" {
		if err := checkProof(*proof, *vkey); err != nil {
			fail(err)
		}
		return
	}
	if flag.NArg() != 1 {
		fail(errors.New("usage: tlogcheck [-vkey VKEY] [-old SIZE:ROOT] BASE"))
	}
	if err := check(&reader{base: flag.Arg(0), seen: map[string][]byte{}}, *vkey, *old); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "tlogcheck:", err)
	os.Exit(1)
}

func check(r *reader, vkey, old string) error {
	origin, tree, err := readCheckpoint(r, vkey)
	if err != nil {
		return err
	}
	fmt.Printf("checkpoint: %s %d %s\n", origin, tree.N, tree.Hash)
	hashes := tlog.TileHashReader(tree, r)
	entries, err := readEntries(r, tree.N)
	if err != nil {
		return err
	}
	for i, entry := range entries {
		proof, err := tlog.ProveRecord(tree.N, int64(i), hashes)
		if err != nil {
			return fmt.Errorf("entry %d: %v", i, err)
		}
		if err := tlog.CheckRecord(proof, tree.N, tree.Hash, int64(i), tlog.RecordHash(entry)); err != nil {
			return fmt.Errorf("entry %d: %v", i, err)
		}
	}
	fmt.Printf("inclusion: %d entries verified\n", len(entries))
	if old == "" {
		return nil
	}
	return checkOld(old, tree, hashes)
}

func checkOld(old string, tree tlog.Tree, hashes tlog.HashReader) error {
	size, root, err := parseOld(old)
	if err != nil {
		return err
	}
	proof, err := tlog.ProveTree(tree.N, size, hashes)
	if err != nil {
		return fmt.Errorf("consistency %d -> %d: %v", size, tree.N, err)
	}
	if err := tlog.CheckTree(proof, tree.N, tree.Hash, size, root); err != nil {
		return fmt.Errorf("consistency %d -> %d: %v", size, tree.N, err)
	}
	fmt.Printf("consistency: %d -> %d verified\n", size, tree.N)
	return nil
}

func readCheckpoint(r *reader, vkey string) (string, tlog.Tree, error) {
	data, err := r.get("checkpoint")
	if err != nil {
		return "", tlog.Tree{}, err
	}
	return openCheckpoint(data, vkey)
}

func openCheckpoint(data []byte, vkey string) (string, tlog.Tree, error) {
	text := string(data)
	if vkey != "" {
		verifier, err := note.NewVerifier(vkey)
		if err != nil {
			return "", tlog.Tree{}, err
		}
		n, err := note.Open(data, note.VerifierList(verifier))
		if err != nil {
			return "", tlog.Tree{}, fmt.Errorf("checkpoint signature: %v", err)
		}
		text = n.Text
	}
	lines := strings.SplitN(text, "\n", 4)
	if len(lines) < 4 {
		return "", tlog.Tree{}, errors.New("checkpoint: fewer than three lines")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return "", tlog.Tree{}, fmt.Errorf("checkpoint size: %v", err)
	}
	root, err := parseHash(lines[2])
	return lines[0], tlog.Tree{N: size, Hash: root}, err
}

func parseOld(old string) (int64, tlog.Hash, error) {
	parts := strings.SplitN(old, ":", 2)
	if len(parts) != 2 {
		return 0, tlog.Hash{}, errors.New("-old must be SIZE:BASE64ROOT")
	}
	size, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return 0, tlog.Hash{}, fmt.Errorf("-old size: %v", err)
	}
	root, err := parseHash(parts[1])
	return size, root, err
}

func parseHash(text string) (tlog.Hash, error) {
	var h tlog.Hash
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil || len(raw) != tlog.HashSize {
		return h, fmt.Errorf("not a base64 SHA-256 hash: %q", text)
	}
	copy(h[:], raw)
	return h, nil
}

// readEntries reads every entry bundle of a tree of size n and splits it into
// its uint16-length-prefixed entries.
func readEntries(r *reader, n int64) ([][]byte, error) {
	var entries [][]byte
	for start := int64(0); start < n; start += 1 << height {
		width := n - start
		if width > 1<<height {
			width = 1 << height
		}
		tile := tlog.Tile{H: height, L: -1, N: start >> height, W: int(width)}
		data, err := r.get(c2spPath(tile))
		if err != nil {
			return nil, err
		}
		bundle, err := splitBundle(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", c2spPath(tile), err)
		}
		if int64(len(bundle)) != width {
			return nil, fmt.Errorf("%s: %d entries, want %d", c2spPath(tile), len(bundle), width)
		}
		entries = append(entries, bundle...)
	}
	return entries, nil
}

func splitBundle(data []byte) ([][]byte, error) {
	var out [][]byte
	for len(data) > 0 {
		if len(data) < 2 {
			return nil, errors.New("truncated length")
		}
		size := int(data[0])<<8 | int(data[1])
		if len(data) < 2+size {
			return nil, errors.New("truncated entry")
		}
		out = append(out, data[2:2+size])
		data = data[2+size:]
	}
	return out, nil
}

// c2spPath is Go's tile path (tile/H/L/N[.p/W]) without the height, which
// C2SP fixes at 8, and with "entries" for Go's "data" level.
func c2spPath(t tlog.Tile) string {
	p := strings.TrimPrefix(t.Path(), fmt.Sprintf("tile/%d/", height))
	if strings.HasPrefix(p, "data/") {
		p = "entries/" + strings.TrimPrefix(p, "data/")
	}
	return "tile/" + p
}

// reader fetches tiles from a URL or a folder; tlog authenticates them.
type reader struct {
	base string
	seen map[string][]byte
}

func (r *reader) Height() int { return height }

func (r *reader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		data, err := r.get(c2spPath(t))
		if err != nil {
			return nil, err
		}
		out[i] = data
	}
	return out, nil
}

func (r *reader) SaveTiles(tiles []tlog.Tile, data [][]byte) {}

func (r *reader) get(path string) ([]byte, error) {
	if data, ok := r.seen[path]; ok {
		return data, nil
	}
	data, err := r.fetch(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if path != "checkpoint" {
		r.seen[path] = data
	}
	return data, nil
}

func (r *reader) fetch(path string) ([]byte, error) {
	if !strings.HasPrefix(r.base, "http://") && !strings.HasPrefix(r.base, "https://") {
		return os.ReadFile(filepath.Join(r.base, filepath.FromSlash(path)))
	}
	resp, err := http.Get(strings.TrimSuffix(r.base, "/") + "/" + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return io.ReadAll(resp.Body)
}

// checkProof verifies a c2sp.org/tlog-proof whose extra line is the entry.
func checkProof(file, vkey string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	head, checkpoint, found := strings.Cut(string(data), "\n\n")
	lines := strings.Split(head, "\n")
	if !found || lines[0] != "c2sp.org/tlog-proof@v1" || len(lines) < 3 {
		return errors.New("proof: not a c2sp.org/tlog-proof@v1")
	}
	extra := strings.TrimPrefix(lines[1], "extra ")
	if extra == lines[1] {
		return errors.New("proof: no extra line holding the entry")
	}
	entry, err := base64.StdEncoding.DecodeString(extra)
	if err != nil {
		return fmt.Errorf("proof: extra: %v", err)
	}
	index, err := strconv.ParseInt(strings.TrimPrefix(lines[2], "index "), 10, 64)
	if !strings.HasPrefix(lines[2], "index ") || err != nil {
		return fmt.Errorf("proof: bad index line %q", lines[2])
	}
	var path tlog.RecordProof
	for _, line := range lines[3:] {
		h, err := parseHash(line)
		if err != nil {
			return fmt.Errorf("proof: %v", err)
		}
		path = append(path, h)
	}
	origin, tree, err := openCheckpoint([]byte(checkpoint), vkey)
	if err != nil {
		return err
	}
	if err := tlog.CheckRecord(path, tree.N, tree.Hash, index, tlog.RecordHash(entry)); err != nil {
		return fmt.Errorf("proof: entry %d: %v", index, err)
	}
	fmt.Printf("proof: entry %d of %s %d verified\n", index, origin, tree.N)
	return nil
}
