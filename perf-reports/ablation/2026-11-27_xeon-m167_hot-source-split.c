// Prototype (not part of the build): a two-level source partition for the pull g-SpMM (copy_u_sum).
// Each destination row's in-edges are split into hot ones (sources among the K most frequent,
// whose feature rows are copied once per call into a compact K-row buffer)
// and cold ones; chunks of CHUNK destination rows run all their hot edges, then all their cold
// edges. Baseline: the same loop over the unsplit in-CSR (the plain pull). Third, "one-pass
// tagged": the in-CSR order kept, each slot reading its row from the compact buffer or the
// table (bit 31 of the slot picks the base, no branch), so its output is bitwise the plain
// pass's. All use a prefetch distance of PD edges. Graph: a dataset directory (src.bin,
// dst.bin, int32) from `gnnkern-bench gen`.
// Build: gcc -O2 -march=native -fopenmp -DD=32 [-DPD=16] THIS_FILE.c
// Run: ./a.out DIR NUM_NODES NUM_EDGES HOT_SOURCES CHUNK_ROWS (data: the .tsv beside this file)
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <omp.h>
#include <immintrin.h>
#include <sys/mman.h>
#ifndef D
#define D 32
#endif
#define V (D/16)
#ifndef PD
#define PD 16
#endif
static int cmp64(const void*a,const void*b){uint64_t x=*(uint64_t*)a,y=*(uint64_t*)b;return x<y?-1:x>y;}
static uint32_t* load(const char*dir,const char*f,size_t n){char p[512];snprintf(p,512,"%s/%s",dir,f);FILE*fp=fopen(p,"rb");uint32_t*b=malloc(n*4);if(fread(b,4,n,fp)!=n)exit(1);fclose(fp);return b;}
static void* big(size_t n){void*p=aligned_alloc(1<<21,(n+(1<<21)-1)&~(size_t)((1<<21)-1));madvise(p,n,MADV_HUGEPAGE);return p;}
static inline void pf(const float*p){for(int l=0;l<D*4;l+=64)_mm_prefetch((const char*)p+l,_MM_HINT_T0);}
int main(int argc,char**argv){
  const char*dir=argv[1]; size_t N=atol(argv[2]),E=atol(argv[3]),K=atol(argv[4]); size_t chunk=atol(argv[5]);
  uint32_t*s=load(dir,"src.bin",E),*d=load(dir,"dst.bin",E);
  uint64_t*pairs=malloc(E*8); for(size_t e=0;e<E;e++)pairs[e]=((uint64_t)d[e]<<32)|s[e];
  qsort(pairs,E,8,cmp64);
  uint32_t*ptr=calloc(N+1,4),*src=malloc(E*4);
  for(size_t e=0;e<E;e++){ptr[(pairs[e]>>32)+1]++; src[e]=(uint32_t)pairs[e];}
  for(size_t i=0;i<N;i++)ptr[i+1]+=ptr[i];
  uint64_t*deg=calloc(N,8); for(size_t e=0;e<E;e++)deg[src[e]]++;
  uint64_t*dk=malloc(N*8); for(size_t i=0;i<N;i++)dk[i]=((~deg[i]&0xffffffffULL)<<32)|i; qsort(dk,N,8,cmp64);
  int32_t*rank=malloc(N*4); for(size_t i=0;i<N;i++)rank[i]=-1; uint32_t*hotid=malloc(K*4);
  size_t hotE=0; for(size_t k=0;k<K;k++){uint32_t i=(uint32_t)dk[k]; rank[i]=k; hotid[k]=i; hotE+=deg[i];}
  uint32_t*hptr=calloc(N+1,4),*cptr=calloc(N+1,4),*hs=malloc(E*4),*cs=malloc(E*4); size_t nh=0,nc=0;
  for(size_t v=0;v<N;v++){for(uint32_t e=ptr[v];e<ptr[v+1];e++){if(rank[src[e]]>=0)hs[nh++]=rank[src[e]];else cs[nc++]=src[e];} hptr[v+1]=nh;cptr[v+1]=nc;}
  float*x=big(N*D*4); for(size_t i=0;i<N*D;i++)x[i]=(float)(i%7);
  float*out=big(N*D*4); memset(out,0,N*D*4); float*out2=big(N*D*4); memset(out2,0,N*D*4);
  float*hot=big(K*D*4);
  uint32_t*tag=malloc(E*4); for(size_t e=0;e<E;e++)tag[e]=rank[src[e]]>=0? (0x80000000u|(uint32_t)rank[src[e]]):src[e];
  float*out3=big(N*D*4); memset(out3,0,N*D*4);
  printf("# D=%d K=%zu (%.2f MiB) chunk=%zu hot edges %.1f%%\n",D,K,K*D*4/1048576.0,chunk,100.0*hotE/E);
  for(int round=0;round<7;round++){
  double t0=omp_get_wtime();
  #pragma omp parallel for schedule(dynamic,4096) num_threads(2)
  for(size_t v=0;v<N;v++){ __m512 a[V]; for(int j=0;j<V;j++)a[j]=_mm512_setzero_ps();
    for(uint32_t e=ptr[v];e<ptr[v+1];e++){ if(e+PD<E)pf(x+(size_t)src[e+PD]*D);
      const float*r=x+(size_t)src[e]*D; for(int j=0;j<V;j++)a[j]=_mm512_add_ps(a[j],_mm512_load_ps(r+16*j)); }
    for(int j=0;j<V;j++)_mm512_store_ps(out+v*D+16*j,a[j]);}
  double t1=omp_get_wtime();
  #pragma omp parallel for num_threads(2)
  for(size_t k=0;k<K;k++){memcpy(hot+k*D,x+(size_t)hotid[k]*D,D*4);}
  #pragma omp parallel for schedule(dynamic,1) num_threads(2)
  for(size_t c=0;c<N;c+=chunk){ size_t ve=c+chunk<N?c+chunk:N;
    for(size_t v=c;v<ve;v++){__m512 a[V]; for(int j=0;j<V;j++)a[j]=_mm512_setzero_ps();
      for(uint32_t e=hptr[v];e<hptr[v+1];e++){const float*r=hot+(size_t)hs[e]*D; for(int j=0;j<V;j++)a[j]=_mm512_add_ps(a[j],_mm512_load_ps(r+16*j));}
      for(int j=0;j<V;j++)_mm512_store_ps(out2+v*D+16*j,a[j]);}
    for(size_t v=c;v<ve;v++){ if(cptr[v]==cptr[v+1])continue; __m512 a[V]; for(int j=0;j<V;j++)a[j]=_mm512_load_ps(out2+v*D+16*j);
      for(uint32_t e=cptr[v];e<cptr[v+1];e++){ if(e+PD<nc)pf(x+(size_t)cs[e+PD]*D);
        const float*r=x+(size_t)cs[e]*D; for(int j=0;j<V;j++)a[j]=_mm512_add_ps(a[j],_mm512_load_ps(r+16*j)); }
      for(int j=0;j<V;j++)_mm512_store_ps(out2+v*D+16*j,a[j]);}}
  double t2=omp_get_wtime();
  double t3=omp_get_wtime();
  #pragma omp parallel for num_threads(2)
  for(size_t k=0;k<K;k++){memcpy(hot+k*D,x+(size_t)hotid[k]*D,D*4);}
  #pragma omp parallel for schedule(dynamic,4096) num_threads(2)
  for(size_t v=0;v<N;v++){ const float*base[2]={x,hot}; __m512 a[V]; for(int j=0;j<V;j++)a[j]=_mm512_setzero_ps();
    for(uint32_t e=ptr[v];e<ptr[v+1];e++){ if(e+PD<E){uint32_t q=tag[e+PD]; pf(base[q>>31]+(size_t)(q&0x7fffffff)*D);}
      uint32_t q=tag[e]; const float*r=base[q>>31]+(size_t)(q&0x7fffffff)*D; for(int j=0;j<V;j++)a[j]=_mm512_add_ps(a[j],_mm512_load_ps(r+16*j)); }
    for(int j=0;j<V;j++)_mm512_store_ps(out3+v*D+16*j,a[j]);}
  double t4=omp_get_wtime();
  printf("   one-pass tagged %.1f ms (bitwise same as plain: %d)\n",(t4-t3)*1e3, memcmp(out,out3,N*D*4)==0);
  double md=0; for(size_t i=0;i<N*D;i+=997){double q=out[i]-out2[i]; if(q<0)q=-q; if(q>md)md=q;}
  printf("round %d\tplain %.1f ms\tsplit %.1f ms\tratio %.3f\tmaxdiff %g\n",round,(t1-t0)*1e3,(t2-t1)*1e3,(t1-t0)/(t2-t1),md);}
}
