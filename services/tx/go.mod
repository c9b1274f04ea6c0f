module github.com/tidemark/tidemark/services/tx

go 1.26.8

require github.com/tidemark/tidemark/platform v0.0.0

replace github.com/tidemark/tidemark/platform => ../../platform
