#!/usr/bin/env bash
# Makes the PEM files of a local Heatsink cluster with the `openssl` tool:
# a CA, server certificates (the master's, DNS:localhost and IP:127.0.0.1) and
# per-client certificates whose URI SAN names the client
# (spiffe://TRUST_DOMAIN/heatsink/client/ID, or .../heatsink/tenant/T/client/ID;
# docs/runtime.md "Identities from certificates"). Client certificates also
# carry DNS:localhost and IP:127.0.0.1 and both TLS usages, so a store can use
# its certificate for the master (client side) and for its data service.
# Keys are EC P-256, written mode 0600.
#
# Usage:
#   tools/make-certs.sh cluster DIR [options] ID[:TENANT]...
#       DIR/ca.pem, ca.key; DIR/master.pem, master.key;
#       DIR/client-ID.pem, client-ID.key for each ID
#   tools/make-certs.sh ca DIR [--name NAME]               DIR/NAME.pem, NAME.key (NAME: ca)
#   tools/make-certs.sh server DIR NAME [options]          DIR/NAME.pem, NAME.key
#   tools/make-certs.sh client DIR ID [--tenant T] [options] [--name NAME]
#                                                          DIR/NAME.pem (NAME: client-ID)
# Options:
#   --ca NAME             the CA in DIR that signs (default: ca)
#   --trust-domain TD     trust domain of client identities (default: heatsink.local)
#   --days N              validity from now (default: 30)
#   --not-before TIME     validity window instead of --days, TIME as
#   --not-after TIME      YYYYMMDDHHMMSSZ (a --not-after in the past makes an
#                         expired certificate, for tests)
#   --san SAN[,SAN...]    server: its names (default: DNS:localhost,IP:127.0.0.1)
set -euo pipefail

die() { echo "make-certs: $*" >&2; exit 2; }
command -v openssl > /dev/null || die "the openssl tool is not installed (Debian package openssl)"

(($# >= 2)) || die "usage: tools/make-certs.sh cluster|ca|server|client DIR ... (see the header)"
command=$1
dir=$2
shift 2

ca=ca
name=
tenant=
trust_domain=heatsink.local
days=30
not_before=
not_after=
server_sans=DNS:localhost,IP:127.0.0.1
positional=()
while (($#)); do
  case $1 in
    --ca) ca=${2:?--ca needs a name}; shift 2 ;;
    --name) name=${2:?--name needs a name}; shift 2 ;;
    --tenant) tenant=${2:?--tenant needs a tenant}; shift 2 ;;
    --trust-domain) trust_domain=${2:?--trust-domain needs a domain}; shift 2 ;;
    --days) days=${2:?--days needs a number}; shift 2 ;;
    --not-before) not_before=${2:?--not-before needs a time}; shift 2 ;;
    --not-after) not_after=${2:?--not-after needs a time}; shift 2 ;;
    --san) server_sans=${2:?--san needs names}; shift 2 ;;
    --*) die "unknown option '$1'" ;;
    *) positional+=("$1"); shift ;;
  esac
done

[[ $trust_domain =~ ^[a-z0-9._-]+$ ]] ||
  die "--trust-domain '$trust_domain' may hold only lowercase letters, digits, '.', '-', '_'"
[[ $days =~ ^[1-9][0-9]*$ ]] || die "--days '$days' is not a positive number"
time_re='^[0-9]{14}Z$'
[[ -z $not_before || $not_before =~ $time_re ]] || die "--not-before '$not_before' is not YYYYMMDDHHMMSSZ"
[[ -z $not_after || $not_after =~ $time_re ]] || die "--not-after '$not_after' is not YYYYMMDDHHMMSSZ"
mkdir -p "$dir"
umask 077

make_ca() {
  local ca_name=$1
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$dir/$ca_name.key" -out "$dir/$ca_name.pem" -days "$((days + 1))" \
    -subj "/CN=heatsink-$ca_name" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
    2> /dev/null || die "openssl could not make the CA '$ca_name'"
  chmod 0644 "$dir/$ca_name.pem"
}

# sign NAME CN EXTENSIONS: a key, and a certificate signed by $ca. `openssl
# ca` (with a throw-away database) is what takes an explicit validity window.
sign() {
  local leaf=$1 common_name=$2 extensions=$3
  [[ -f $dir/$ca.pem && -f $dir/$ca.key ]] || die "no CA '$ca' in $dir (make it with: ca $dir --name $ca)"
  local work
  work=$(mktemp -d)
  printf '%s\n' "$extensions" > "$work/ext"
  touch "$work/index.txt"
  cat > "$work/ca.cnf" << EOF
[ ca ]
default_ca = heatsink
[ heatsink ]
database = $work/index.txt
new_certs_dir = $work
serial = $work/serial
default_md = sha256
policy = policy_any
unique_subject = no
copy_extensions = none
[ policy_any ]
commonName = supplied
EOF
  openssl rand -hex 16 > "$work/serial"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$dir/$leaf.key" -out "$work/csr" -subj "/CN=$common_name" 2> /dev/null ||
    die "openssl could not make the key of '$leaf'"
  local validity=(-days "$days")
  if [[ -n $not_before || -n $not_after ]]; then
    validity=()
    [[ -n $not_before ]] && validity+=(-startdate "$not_before")
    [[ -n $not_after ]] && validity+=(-enddate "$not_after")
    [[ -n $not_after ]] || validity+=(-days "$days")
  fi
  openssl ca -batch -notext -config "$work/ca.cnf" -cert "$dir/$ca.pem" -keyfile "$dir/$ca.key" \
    -in "$work/csr" -out "$dir/$leaf.pem" -extfile "$work/ext" "${validity[@]}" 2> "$work/log" ||
    die "openssl could not sign '$leaf': $(tail -n 3 "$work/log")"
  rm -rf "$work"
  chmod 0644 "$dir/$leaf.pem"
}

make_server() {
  sign "$1" "$1" "basicConstraints=CA:FALSE
subjectAltName=$server_sans
extendedKeyUsage=serverAuth"
}

# make_client ID TENANT NAME
make_client() {
  local id=$1 client_tenant=$2 leaf=$3
  [[ $id =~ ^[1-9][0-9]{0,19}$ ]] || die "client id '$id' is not a decimal number from 1"
  local uri="spiffe://$trust_domain/heatsink/client/$id"
  if [[ -n $client_tenant ]]; then
    [[ $client_tenant =~ ^[A-Za-z0-9._-]{1,128}$ && $client_tenant != . && $client_tenant != .. ]] ||
      die "tenant '$client_tenant' must be 1-128 of [A-Za-z0-9._-]"
    uri="spiffe://$trust_domain/heatsink/tenant/$client_tenant/client/$id"
  fi
  sign "$leaf" "heatsink-client-$id" "basicConstraints=CA:FALSE
subjectAltName=URI:$uri,DNS:localhost,IP:127.0.0.1
extendedKeyUsage=clientAuth,serverAuth"
}

case $command in
  ca)
    ((${#positional[@]} == 0)) || die "ca takes no arguments besides DIR"
    make_ca "${name:-ca}"
    ;;
  server)
    ((${#positional[@]} == 1)) || die "server needs one NAME"
    make_server "${positional[0]}"
    ;;
  client)
    ((${#positional[@]} == 1)) || die "client needs one ID"
    make_client "${positional[0]}" "$tenant" "${name:-client-${positional[0]}}"
    ;;
  cluster)
    ((${#positional[@]} >= 1)) || die "cluster needs at least one client ID[:TENANT]"
    make_ca "$ca"
    make_server master
    for spec in "${positional[@]}"; do
      id=${spec%%:*}
      client_tenant=
      [[ $spec == *:* ]] && client_tenant=${spec#*:}
      make_client "$id" "$client_tenant" "client-$id"
    done
    ;;
  *) die "unknown command '$command' (cluster, ca, server, client)" ;;
esac
