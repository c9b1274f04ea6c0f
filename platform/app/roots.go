package app

// Images carry a static binary on an empty base, with no CA bundle: TLS to S3, Postgres or an OTLP
// collector would trust nothing. The fallback bundle (Mozilla's roots, compiled in) is used only
// when the system has none, so a CA bundle mounted by the platform team still wins.
import _ "golang.org/x/crypto/x509roots/fallback"
