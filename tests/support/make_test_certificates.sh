#!/usr/bin/env bash
# Makes, in the current directory, what the TLS tests need (EC keys, so it takes a fraction of a second):
#   ca.crt/key           the CA the tests trust          other-ca.crt   a CA nobody signed with
#   server.crt/key       localhost and 127.0.0.1          elsewhere.crt  a valid certificate for another name
#   expired.crt/key      localhost, expired in 2020        client.crt/key a client certificate (mutual TLS)
# and for swl-ratelimit's gRPC over TLS (tests/test_ratelimit_tls.cpp):
#   server-next.crt/key, server-last.crt/key   localhost and 127.0.0.1 again, other subjects: a rotation's
#   client-san.crt/key   a client holding DNS:envoy.gateway.test     client-uri.crt/key  it as a URI only
#   stranger.crt/key     a client certificate other-ca signed
set -euo pipefail
ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
openssl req -x509 $ec -keyout ca.key -out ca.crt -days 2 -subj /CN=swl-test-ca
openssl req -x509 $ec -keyout other-ca.key -out other-ca.crt -days 2 -subj /CN=swl-other-ca
sign() { # name subject san [ca]
  local ca=${4:-ca}
  openssl req -new $ec -keyout $1.key -out $1.csr -subj "$2"
  printf 'subjectAltName=%s\n' "$3" > $1.ext
  openssl x509 -req -in $1.csr -CA $ca.crt -CAkey $ca.key -CAcreateserial -out $1.crt -days 2 -extfile $1.ext
}
sign server /CN=localhost DNS:localhost,IP:127.0.0.1
sign elsewhere /CN=elsewhere.example DNS:elsewhere.example
sign client /CN=swl-client DNS:swl-client
sign server-next /CN=localhost-next DNS:localhost,IP:127.0.0.1
sign server-last /CN=localhost-last DNS:localhost,IP:127.0.0.1
sign client-san /CN=envoy DNS:envoy.gateway.test,URI:spiffe://cluster.local/ns/gateway/sa/envoy
sign client-uri /CN=envoy.gateway.test URI:spiffe://envoy.gateway.test,DNS:envoy-elsewhere.test
sign stranger /CN=swl-client DNS:swl-client,DNS:envoy.gateway.test other-ca
# expired: signed by `openssl ca` with dates in the past
mkdir -p ca-db && : > ca-db/index && echo 01 > ca-db/serial
cat > ca.cnf <<CNF
[ca]
default_ca = test
[test]
database = ca-db/index
serial = ca-db/serial
new_certs_dir = ca-db
default_md = sha256
policy = any
copy_extensions = copy
[any]
commonName = supplied
CNF
openssl req -new $ec -keyout expired.key -out expired.csr -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1
openssl ca -batch -config ca.cnf -cert ca.crt -keyfile ca.key -in expired.csr -out expired.crt -startdate 20200101000000Z -enddate 20200102000000Z
