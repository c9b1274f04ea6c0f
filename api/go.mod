module github.com/tidemark/tidemark/api

go 1.26.8
