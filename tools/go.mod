module github.com/tidemark/tidemark/tools

go 1.26.8

require (
	github.com/segmentio/kafka-go v0.4.51
	github.com/tidemark/tidemark/api v0.0.0
	github.com/tidemark/tidemark/platform v0.0.0
	github.com/tidemark/tidemark/services/market v0.0.0
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
)

replace (
	github.com/tidemark/tidemark/api => ../api
	github.com/tidemark/tidemark/platform => ../platform
	github.com/tidemark/tidemark/services/market => ../services/market
)
