// Short random-gather probe of section A2 of 2026-11-27_xeon-m167_vm-l3-blocking.tsv (not part of the build): the kind of
// probe a library could run once per process. Build: gcc -O2 -march=native -fopenmp THIS_FILE.c; ./a.out [SAMPLES]
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <omp.h>
#include <immintrin.h>
#include <sys/mman.h>
int main(int argc,char**argv){ size_t T=(size_t)512<<20; int PD=16; size_t n=argc>1?atol(argv[1]):(1<<19);
 float*t=aligned_alloc(1<<21,T); madvise(t,T,MADV_HUGEPAGE); for(size_t i=0;i<T/4;i++)t[i]=1;
 uint32_t*u=malloc(n*4); uint64_t x=88172645463325252ULL; for(size_t i=0;i<n;i++){x^=x<<13;x^=x>>7;x^=x<<17;u[i]=(uint32_t)(x>>32);}
 for(int rep=0;rep<4;rep++){ double t00=omp_get_wtime(); double base=0;
  for(size_t W=(size_t)4<<20; W<=T; W*=2){ size_t lines=W/64; double acc=0;
   #pragma omp parallel for reduction(+:acc) num_threads(2)
   for(size_t l=0;l<lines;l++) acc+=t[l*16];
   double t0=omp_get_wtime();
   #pragma omp parallel for reduction(+:acc) num_threads(2) schedule(static)
   for(size_t i=0;i<n;i++){ if(i+PD<n)_mm_prefetch((const char*)(t+(size_t)(((uint64_t)u[i+PD]*lines)>>32)*16),_MM_HINT_T0); acc+=t[(size_t)(((uint64_t)u[i]*lines)>>32)*16]; }
   double r=n/(omp_get_wtime()-t0)/1e9; if(!base)base=r;
   printf("%3zu:%.2f ",W>>20,r/base); if(acc==7)printf("x"); }
  printf(" base %.3f G/s [%.0f ms]\n",base,(omp_get_wtime()-t00)*1e3);}
}
