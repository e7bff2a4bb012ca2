module github.com/bridle-dev/bridle

go 1.26.8
