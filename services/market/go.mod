module github.com/tidemark/tidemark/services/market

go 1.26.8
