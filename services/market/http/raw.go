package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"strconv"

	"github.com/tidemark/tidemark/services/market"
)

// rawList writes the list envelope around records stored as API JSON. Records are copied as stored
// (canonical encoding at ingest) instead of going through encoding/json, which would re-validate and
// compact every byte on the hottest path of the service.
type rawList struct {
	records []market.Row
	meta    any
}

func (l rawList) Respond(w nethttp.ResponseWriter, _ *nethttp.Request) error {
	meta, err := json.Marshal(l.meta)
	if err != nil {
		return fmt.Errorf("encode meta: %w", err)
	}
	size := 64 + len(meta)
	for _, r := range l.records {
		size += len(r.Record) + 1
	}
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(`{"success":true,"records":[`)
	for i, r := range l.records {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(r.Record)
	}
	b.WriteString(`],"meta":`)
	b.Write(meta)
	b.WriteByte('}')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	_, err = w.Write(b.Bytes())
	return err
}
