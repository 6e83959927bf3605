# Shell helpers shared by the bench and soak scripts; source it.

# listening PORT: something accepts connections on 127.0.0.1:PORT.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port: a loopback port nothing listens on (there is a race between
# this and the bind; the scripts check their servers came up).
free_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 40000))
		listening "$p" || { echo "$p"; return; }
	done
	echo "$(basename "$0"): no free port" >&2
	exit 1
}

# wait_listening PORT: wait up to 10 s for a listener on PORT.
wait_listening() {
	for _ in $(seq 200); do listening "$1" && return 0; sleep 0.05; done
	return 1
}
