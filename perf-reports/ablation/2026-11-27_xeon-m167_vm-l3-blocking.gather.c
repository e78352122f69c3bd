// Random-gather probe of section A of 2026-11-27_xeon-m167_vm-l3-blocking.tsv (not part of the build).
// Build: gcc -O2 -mavx512f -fopenmp THIS_FILE.c; run alone on the machine (needs 1 GiB + 64 MiB).
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <omp.h>
#include <immintrin.h>
#include <sys/mman.h>
// random gathers of `row` bytes from a table of S bytes; 2 threads; prefetch distance PD rows
static double now(){return omp_get_wtime();}
int main(int argc,char**argv){
  size_t maxS=(size_t)1<<30; 
  float*t=aligned_alloc(2<<20,maxS); madvise(t,maxS,MADV_HUGEPAGE);
  for(size_t i=0;i<maxS/4;i++)t[i]=(float)(i&255);
  size_t n=1<<24; uint32_t*idx=malloc(n*4);
  int rows[]={64,512};
  for(int ri=0;ri<2;ri++){int row=rows[ri];
  for(size_t S=(size_t)256<<10;S<=maxS;S*=2){
    size_t nrows=S/row; uint64_t x=88172645463325252ULL;
    for(size_t i=0;i<n;i++){x^=x<<13;x^=x>>7;x^=x<<17;idx[i]=x%nrows;}
    size_t m = row==64? n : n/4;
    double best=1e9;
    for(int rep=0;rep<3;rep++){
    double t0=now(); float acc=0;
    #pragma omp parallel reduction(+:acc) num_threads(2)
    { __m512 a=_mm512_setzero_ps();
      #pragma omp for schedule(static)
      for(size_t i=0;i<m;i++){
        if(i+16<m){const char*p=(const char*)t+(size_t)idx[i+16]*row; for(int l=0;l<row;l+=64)_mm_prefetch(p+l,_MM_HINT_T0);}
        const float*r=(const float*)((const char*)t+(size_t)idx[i]*row);
        for(int k=0;k<row/4;k+=16)a=_mm512_add_ps(a,_mm512_load_ps(r+k));
      }
      acc+=_mm512_reduce_add_ps(a);}
    double dt=now()-t0; if(dt<best)best=dt; if(acc==1.2345f)printf("x");}
    printf("row %3d B  set %5zu MiB  %.3f G rows/s  %.3f G lines/s  %.1f GB/s\n",row,S>>20,m/best/1e9,m*(row/64)/best/1e9,m*row/best/1e9);
    fflush(stdout);
  }}
}
