#!/bin/bash
# One device call: build llama.cpp (CUDA, sm_90) and time it on zero-weight GGUFs of catalogue shapes.
set -u
REPO=$(pwd); T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
LOG=$OUT/log.txt; INFO=$OUT/info.txt; J=$OUT/bench.jsonl; BB=$OUT/batched.txt
W=/tmp/w; mkdir -p $W; cd $W
tar xJf $REPO/.gpu/llama-src.tar.xz && tar -S -xzf $REPO/.gpu/models.tar.gz
{ date -u; nvidia-smi; nvidia-smi -q -d CLOCK,POWER,MEMORY; nvcc --version; nproc; free -g; cmake --version; } > $INFO 2>&1
echo "setup $(el)s" >> $LOG
cmake -S llama.cpp -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real \
  -DGGML_CUDA_FA=OFF -DGGML_CUDA_NCCL=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DGGML_NATIVE=ON > $W/cmake.log 2>&1 \
  || { echo CMAKE FAILED >> $LOG; tail -40 $W/cmake.log >> $LOG; exit 1; }
echo "configured $(el)s" >> $LOG
ninja -C build -j 18 llama-bench llama-batched-bench > $W/ninja.log 2>&1 \
  || { echo BUILD FAILED >> $LOG; grep -B2 -A10 -m3 'error' $W/ninja.log >> $LOG; tail -20 $W/ninja.log >> $LOG; exit 1; }
echo "built $(el)s" >> $LOG
B=build/bin; M=models
bench() { # model, timeout, llama-bench args
  f=$1; t=$2; shift 2; echo "== $f $* (start $(el)s)" >> $LOG
  timeout $t $B/llama-bench -m $M/$f -ngl 99 -fa 0 -o jsonl "$@" >> $J 2>> $W/err.txt; echo "rc $? end $(el)s" >> $LOG; }
bench llama-2-7b-Q4_0.gguf 90 -p 512 -n 128 -r 3
bench llama-3.1-8b-Q4_K_M.gguf 90 -p 512,2048 -n 128 -r 3
bench llama-3.1-8b-Q8_0.gguf 90 -p 512 -n 128 -r 3
bench llama-3.1-8b-F16.gguf 90 -p 512 -n 128 -r 3
echo "== batched-bench (start $(el)s)" >> $LOG
timeout 120 $B/llama-batched-bench -m $M/llama-3.1-8b-Q4_K_M.gguf -ngl 99 -fa off -c 24576 -b 2048 -ub 512 \
  -npp 128,512 -ntg 128 -npl 1,2,4,8,16,32 > $BB 2>> $W/err.txt; echo "rc $? end $(el)s" >> $LOG
bench qwen3-8b-Q4_K_M.gguf 90 -p 512 -n 128 -d 0,8192 -r 3
bench qwen3-30b-a3b-Q4_K_M.gguf 90 -p 512 -n 128 -r 3
bench llama-3.1-70b-Q4_K_M.gguf 150 -p 512 -n 128 -r 2
tail -30 $W/err.txt >> $LOG
echo "done $(el)s" >> $LOG
