module github.com/errandhq/errand

go 1.26.8
