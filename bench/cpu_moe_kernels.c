/* In-cache throughput of each CPU MoE kernel, one thread (diagnostic for bench/RESULTS.md,
 * "CPU MoE"): one expert matrix of 192 rows x K=3072 (L2-resident), nb tokens, per format and
 * tier, GB/s of weight bytes. Build: cc -O2 -std=gnu17 -D_GNU_SOURCE -Isrc bench/cpu_moe_kernels.c
 * build/lib/libftbench.a -ljansson -lm -o cpu_moe_kernels; run: ./cpu_moe_kernels [nb]. Tiers the
 * CPU lacks are skipped. Weight bytes are random but decode to normal numbers (no denormals). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "moe/cpu/kern.h"
#include "moe/formats.h"
#include "moe/cpu/cpumoe.h"
#include "hw/cpu.h"
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  struct ftcpu_info ci; if(ftcpu_probe(&ci)<0) return 1;
  long K=argc>2?atol(argv[2]):3072,N=192; int nb=argc>1?atoi(argv[1]):1;
  static uint8_t w[8<<20], s[1<<20], g[1<<16];
  for(size_t i=0;i<sizeof w;i++) w[i]=(i&1)?(0x3c+(rand()&3)):rand(); for(size_t i=0;i<sizeof s;i++) s[i]=0x38+(rand()&7); for(size_t i=0;i<sizeof g;i+=2){g[i]=0;g[i+1]=0x3c;}
  /* q4: fix d */ 
  static float x[32][8192]; for(int b=0;b<32;b++)for(int k=0;k<8192;k++)x[b][k]=(rand()%200-100)/100.f+0.001f;
  static _Alignas(64) uint8_t xq[32][1<<16]; static float y[32][4096];
  const char*names[]={"bf16","nvfp4","ds_fp4","q4_0","mxfp4_triton"};
  for(int fi=0;fi<5;fi++){ const struct ftformat*f=ftfmt_lookup(names[fi]);
    for(int isa=0;isa<5;isa++){ if(!ftcmoe_isa_supported((enum ftcmoe_isa)isa,ci.isa)) continue; const struct ftk_ops*o=ftk_select(isa,f->id,ci.isa); if(!o->rows) continue;
      struct ftk_mat m={w,s,g,K,N}; size_t bytes;
      if(f->id==FTFMT_BF16) bytes=N*K*2; else if(f->id==FTFMT_Q4_0) bytes=N*K/32*18; else bytes=N*K/2+N*K/16;
      if(f->id==FTFMT_Q4_0) for(long i=0;i<N*K/32;i++){w[i*18]=0;w[i*18+1]=0x20;}
      const void*xs[32]; float*ys[32];
      for(int b=0;b<nb;b++){ if(o->prep){o->prep(x[b],K,xq[b]);xs[b]=xq[b];} else xs[b]=x[b]; ys[b]=y[b];}
      int reps=isa==0?3:200; o->rows(&m,0,N,nb,xs,ys);
      double t=now(); for(int r=0;r<reps;r++) o->rows(&m,0,N,nb,xs,ys); t=now()-t;
      printf("%-13s isa%d %-15s nb=%d  %.1f GB/s (in cache)\n",names[fi],isa,o->name,nb,bytes*reps/t/1e9);
    }}
  /* mxfp4_triton split along K (rows_t): 64 bank rows of N = 5760 columns (gpt-oss gate_up) */
  for(int isa=0;isa<5;isa++){ if(!ftcmoe_isa_supported((enum ftcmoe_isa)isa,ci.isa)) continue;
    const struct ftk_ops*o=ftk_select(isa,FTFMT_MXFP4_TRITON,ci.isa); if(!o->rows_t) continue;
    static float part[32][5760], tmp[32*5760]; float*ps[32]; const void*xs[32];
    struct ftk_mat m={w,s,NULL,2880,5760};
    for(int b=0;b<nb;b++){ if(o->prep){o->prep(x[b],2880,xq[b]);xs[b]=xq[b];} else xs[b]=x[b]; ps[b]=part[b];}
    int reps=100; o->rows_t(&m,0,64,nb,xs,ps,tmp);
    double t=now(); for(int r=0;r<reps;r++) o->rows_t(&m,0,64,nb,xs,ps,tmp); t=now()-t;
    printf("%-13s isa%d %-15s nb=%d  %.1f GB/s (in cache, split along K)\n","mxfp4_triton",isa,o->name,nb,64.0*5760*reps/t/1e9);
  }
}
