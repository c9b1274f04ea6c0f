package pg_test

import (
	"testing"

	"github.com/tidemark/tidemark/platform/pg"
)

func TestTable(t *testing.T) {
	if got, want := (pg.DB{Schema: "svc"}).Table("fills"), `"svc"."fills"`; got != want {
		t.Errorf("Table = %s, want %s", got, want)
	}
	// A name is quoted whole: a dot or a quote in it cannot reach another schema.
	if got, want := pg.Table("svc", `x"."y`), `"svc"."x"".""y"`; got != want {
		t.Errorf("Table = %s, want %s", got, want)
	}
}
