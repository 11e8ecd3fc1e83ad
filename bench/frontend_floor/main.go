// A probe, not a design: the floor of a compiled HTTP front end for tenure's hot acquire route.
// It parses the acquire body, writes an answer the size of tenure's (~2.5 KB, from a stub
// decision: nothing is stored, nothing is decided) and signs it with Ed25519, once per request.
// bench/frontend_floor.py builds and drives it; decisions/0044 says why.
package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
)

type acquire struct {
	Resource   string `json:"resource"`
	Holder     string `json:"holder"`
	TTLSeconds int    `json:"ttlSeconds"`
}

var token int64
var padding = strings.Repeat("x", 1900) // tenure's credential around the data

func main() {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	http.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	http.HandleFunc("/api/v1/lease/acquire", func(w http.ResponseWriter, r *http.Request) {
		var call acquire
		if err := json.NewDecoder(r.Body).Decode(&call); err != nil || call.Resource == "" {
			http.Error(w, `{"error":"resource"}`, http.StatusUnprocessableEntity)
			return
		}
		n := atomic.AddInt64(&token, 1)
		data := fmt.Sprintf(`{"outcome":"GRANTED","resource":%q,"holder":%q,"fencingToken":%d,`+
			`"ttlSeconds":%d,"credential":%q}`, call.Resource, call.Holder, n, call.TTLSeconds, padding)
		proof := base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, []byte(data)))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"data":%s,"proof":%q}`, data, proof)
	})
	if err := http.ListenAndServe("127.0.0.1:"+os.Args[1], nil); err != nil {
		panic(err)
	}
}
