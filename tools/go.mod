module github.com/tidemark/tidemark/tools

go 1.26.8
