#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <immintrin.h>
#include <omp.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec*1e-6;}
int main(int argc,char**argv){
  size_t N=1<<20, D=atoi(argv[1]); size_t E=(size_t)16<<20; int off=atoi(argv[2]);
  size_t bytes=N*D*4+4096;
  char* raw=mmap(0,bytes+(4<<20),PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
  char* base=(char*)(((uintptr_t)raw+(2<<20)-1)&~(uintptr_t)((2<<20)-1));
  madvise(base,bytes,MADV_HUGEPAGE);
  float* x=(float*)(base+off);
  for(size_t i=0;i<N*D;i++) x[i]=(float)(i%7);
  uint32_t* idx=malloc(E*4); uint64_t s=88172645463325252ull;
  for(size_t e=0;e<E;e++){s^=s<<13;s^=s>>7;s^=s<<17; idx[e]=s%N;}
  float* out=aligned_alloc(64,(E/16)*D*4);
  for(int rep=0;rep<5;rep++){
    double t0=now();
    #pragma omp parallel for schedule(static)
    for(size_t v=0;v<E/16;v++){
      __m512 acc[8]; for(int k=0;k<8;k++) acc[k]=_mm512_setzero_ps();
      for(size_t j=0;j<16;j++){ size_t e=v*16+j;
        if(e+32<E) for(size_t l=0;l<D*4;l+=64) _mm_prefetch((char*)(x+(size_t)idx[e+32]*D)+l,_MM_HINT_T0);
        const float* r=x+(size_t)idx[e]*D;
        for(size_t k=0;k<D/16;k++) acc[k]=_mm512_add_ps(acc[k],_mm512_loadu_ps(r+16*k));
      }
      for(size_t k=0;k<D/16;k++) _mm512_storeu_ps(out+v*D+16*k,acc[k]);
    }
    printf("D=%zu off=%d %.1f ms\n",D,off,now()-t0);
  }
  return 0;
}
